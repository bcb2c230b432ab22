// NumPy 1.24 numerics that MCT's results depend on, reproduced bit for bit:
// pairwise summation, linspace, np.histogram of float32 data, np.interp,
// np.arange, round-half-to-even. Internal to quantizers/ and stats/.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_NUMPY_COMPAT_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_NUMPY_COMPAT_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/util/checked_region.h"

namespace quantd::quantizers::internal {

// np.round: round half to even. Adding and removing 2^52 (2^23) rounds in
// the default FE_TONEAREST mode exactly like std::nearbyint, without the
// library call (this sits in every search's innermost loop).
inline double RoundHalfEven(double x) {
  constexpr double kShift = 0x1p52;
  const double a = std::fabs(x);
  if (!(a < kShift)) return x;  // already integral, or NaN/inf
  const double shifted = a + kShift;
  return std::copysign(shifted - kShift, x);
}
inline float RoundHalfEven(float x) {
  constexpr float kShift = 0x1p23f;
  const float a = std::fabs(x);
  if (!(a < kShift)) return x;
  const float shifted = a + kShift;
  return std::copysign(shifted - kShift, x);
}

// numpy's pairwise summation (umath/loops_utils.h), accumulating in T.
// Reads exactly a[0, n): under ASan that region is checked once, not each
// access (core/util/checked_region.h; the sums are most of the searches).
template <typename T>
QUANTD_UNCHECKED_ACCESSES T PairwiseSumUnchecked(const T* a, int64_t n) {
  if (n < 8) {
    T res = T(0);
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSumUnchecked(a, n2) + PairwiseSumUnchecked(a + n2, n - n2);
}

template <typename T>
T PairwiseSum(const T* a, int64_t n) {
  if (n > 0) CheckRegion(a, static_cast<size_t>(n) * sizeof(T));
  return PairwiseSumUnchecked(a, n);
}

// np.mean of a contiguous array of T (T accumulator, then one division).
template <typename T>
T Mean(const T* a, int64_t n) {
  return PairwiseSum(a, n) / static_cast<T>(n);
}

// np.linspace(start, stop, num) in float64 (endpoint included).
std::vector<double> Linspace(double start, double stop, int num);
// The same into y[0, num), for callers that reuse a buffer.
void LinspaceInto(double start, double stop, int num, double* y);

// np.histogram(x, bins=n_bins) of float32 data: float32 edges (returned as
// their exact double values) and integer counts. `x` must be non-empty; a
// range wider than float32 or an infinity (where NumPy fails) gives clamped,
// meaningless counts but never an index outside the bins.
void HistogramF32(const float* x, int64_t n, int n_bins,
                  std::vector<double>* edges, std::vector<double>* counts);

// np.log on float32 arrays as NumPy's AVX2/AVX512F kernels compute it (not
// correctly rounded: a rational minimax polynomial with fused multiply-adds
// on the mantissa in [sqrt(1/2), sqrt(2)), plus exponent * ln 2). MCT's KL
// error sums these logs, and its argmin sees their last-bit differences.
float NumpyLogF32(float x);

// np.interp(x, xp, fp) for increasing xp (default left/right = fp ends).
std::vector<double> Interp(const std::vector<double>& x,
                           const std::vector<double>& xp,
                           const std::vector<double>& fp);

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_NUMPY_COMPAT_H_
