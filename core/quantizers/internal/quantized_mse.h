// The weight searches' inner loop: mean((x - quantize(x))^2) of one row on
// a grid, NumPy's pairwise order, bit-identical to PointwiseError(kMse, x,
// QuantizeRow(x)). An AVX2 body (runtime-checked) does four values at once
// with the same IEEE operations in the same order; the mean stays scalar.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_QUANTIZED_MSE_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_QUANTIZED_MSE_H_

#include <cstdint>
#include <vector>

#include "core/quantizers/internal/kernels.h"

namespace quantd::quantizers::internal {

double QuantizedMse(const double* x, int64_t n, const Grid<double>& g);
float QuantizedMse(const float* x, int64_t n, const Grid<float>& g);

// The k smallest values of a row ascending, then its k largest ascending
// (the whole row sorted when n <= 2k): what QuantizedMseExceeds reads.
std::vector<double> RowExtremes(const double* x, int64_t n, int64_t k);

// Whether QuantizedMse(x, n, g) > loss is certain from values of x outside
// [g.lo, g.hi] alone: their squared errors exactly as QuantizedMse computes
// them, summed from the ends of `extremes` (m values of RowExtremes) inward
// until they prove it, every other term taken as 0, with a margin wider than
// any summation order's rounding. A candidate grid it proves worse than a
// loss already found need not be evaluated (the searches' pruning). False
// where it cannot prove it, and wherever a square could overflow (values,
// grid or loss beyond 1e100), the step is not positive or `loss` is not
// above 1e-250. The row must be finite.
bool QuantizedMseExceeds(const double* extremes, int64_t m, int64_t n,
                         const Grid<double>& g, double loss);

// The portable body, for tests that compare the two.
double QuantizedMseScalar(const double* x, int64_t n, const Grid<double>& g);

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_QUANTIZED_MSE_H_
