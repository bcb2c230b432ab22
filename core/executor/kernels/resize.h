// Resize / Upsample (resize.cc; the kernels register through kernel.h):
// the adjoint autodiff's backward pass takes from the same taps the forward
// reads.
#ifndef QUANTD_CORE_EXECUTOR_KERNELS_RESIZE_H_
#define QUANTD_CORE_EXECUTOR_KERNELS_RESIZE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/kernel.h"

namespace quantd::exec {

// The transpose of `node`'s linear map applied to `dy`: with inputs as the
// node's (0 = x, then roi / scales / sizes; null when absent), returns dx of
// x's shape where each output's gradient goes to every input element the
// forward interpolated it from, times that element's weight (every mode and
// coordinate transformation the kernel implements; an output
// tf_crop_and_resize extrapolates reads no input). Float only.
absl::StatusOr<Tensor> ResizeAdjoint(const Node& node, int64_t opset,
                                     const std::vector<const Tensor*>& inputs,
                                     const Tensor& dy);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_KERNELS_RESIZE_H_
