// The report's per-tensor sums: signal = sum(f^2) and noise = sum((f - q)^2)
// in float64, element by element in order (one rounding per multiply and
// per add, no fused multiply-add), so the figures are the same whichever
// function computed them. Each sum is a chain of dependent additions; four
// tensors' chains run side by side in the four lanes of an AVX2 register
// (checked at run time), about four times the throughput of one.
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_SQUARED_ERROR_SUMS_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_SQUARED_ERROR_SUMS_H_

#include <array>

#include "core/graph/tensor.h"

namespace quantd {

struct SquaredErrorSums {
  double signal = 0, noise = 0;
};

// Zero sums unless both are float tensors of the same element count.
SquaredErrorSums CompareTensors(const Tensor& f, const Tensor& q);

// CompareTensors of four pairs at once; the same bits as four calls.
std::array<SquaredErrorSums, 4> CompareFourTensors(
    const std::array<const Tensor*, 4>& f,
    const std::array<const Tensor*, 4>& q);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_SQUARED_ERROR_SUMS_H_
