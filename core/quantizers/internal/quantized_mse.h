// The weight searches' inner loop: mean((x - quantize(x))^2) of one row on
// a grid, NumPy's pairwise order, bit-identical to PointwiseError(kMse, x,
// QuantizeRow(x)). An AVX2 body (runtime-checked) does four values at once
// with the same IEEE operations in the same order; the mean stays scalar.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_QUANTIZED_MSE_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_QUANTIZED_MSE_H_

#include <cstdint>

#include "core/quantizers/internal/kernels.h"

namespace quantd::quantizers::internal {

double QuantizedMse(const double* x, int64_t n, const Grid<double>& g);
float QuantizedMse(const float* x, int64_t n, const Grid<float>& g);

// The portable body, for tests that compare the two.
double QuantizedMseScalar(const double* x, int64_t n, const Grid<double>& g);

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_QUANTIZED_MSE_H_
