// Loss kernels (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
// Registered by RegisterSoftmax, next to LogSoftmax, whose math they build on.
#ifndef QUANTD_CORE_EXECUTOR_KERNELS_LOSSES_H_
#define QUANTD_CORE_EXECUTOR_KERNELS_LOSSES_H_

#include "core/executor/kernel.h"

namespace quantd::exec {

void RegisterLosses(KernelRegistry& r);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_KERNELS_LOSSES_H_
