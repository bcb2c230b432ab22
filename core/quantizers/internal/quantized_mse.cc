#include "core/quantizers/internal/quantized_mse.h"

#include <immintrin.h>

#include <vector>

#include "core/quantizers/internal/numpy_compat.h"

namespace quantd::quantizers::internal {
namespace {

// The squared errors go into a per-thread buffer, summed in NumPy's order.
template <typename D>
std::vector<D>& Squares(int64_t n) {
  thread_local std::vector<D> squares;
  squares.resize(n);
  return squares;
}

template <typename D>
void SquaresScalar(const D* x, int64_t begin, int64_t n, const Grid<D>& g,
                   D* t) {
  for (int64_t i = begin; i < n; ++i) {
    const D d = x[i] - QuantizeOne(x[i], g);
    t[i] = d * d;
  }
}

// QuantizeOne and the square, four doubles at a time: the clip as two
// compares (NaN passes through, as `if (c < lo)`), RoundHalfEven as
// copysign((|y| + 2^52) - 2^52, y) where |y| < 2^52, else y. Returns how
// many values it did.
__attribute__((target("avx2"))) int64_t SquaresAvx2(const double* x, int64_t n,
                                                    const Grid<double>& g,
                                                    double* t) {
  const __m256d lo = _mm256_set1_pd(g.lo), hi = _mm256_set1_pd(g.hi);
  const __m256d delta = _mm256_set1_pd(g.delta);
  const __m256d shift = _mm256_set1_pd(0x1p52), sign = _mm256_set1_pd(-0.0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    __m256d c = _mm256_blendv_pd(v, lo, _mm256_cmp_pd(v, lo, _CMP_LT_OQ));
    c = _mm256_blendv_pd(c, hi, _mm256_cmp_pd(c, hi, _CMP_GT_OQ));
    const __m256d y = _mm256_div_pd(_mm256_sub_pd(c, lo), delta);
    const __m256d a = _mm256_andnot_pd(sign, y);
    __m256d r = _mm256_sub_pd(_mm256_add_pd(a, shift), shift);
    r = _mm256_or_pd(r, _mm256_and_pd(y, sign));
    r = _mm256_blendv_pd(y, r, _mm256_cmp_pd(a, shift, _CMP_LT_OQ));
    const __m256d q = _mm256_add_pd(_mm256_mul_pd(delta, r), lo);
    const __m256d d = _mm256_sub_pd(v, q);
    _mm256_storeu_pd(t + i, _mm256_mul_pd(d, d));
  }
  // Clean AVX state before the scalar code that follows (see
  // core/stats/batch_histogram.cc: a dirty upper state slowed later stages).
  _mm256_zeroupper();
  return i;
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

}  // namespace

double QuantizedMseScalar(const double* x, int64_t n, const Grid<double>& g) {
  std::vector<double>& t = Squares<double>(n);
  SquaresScalar(x, 0, n, g, t.data());
  return Mean(t.data(), n);
}

double QuantizedMse(const double* x, int64_t n, const Grid<double>& g) {
  std::vector<double>& t = Squares<double>(n);
  const int64_t done = kHaveAvx2 ? SquaresAvx2(x, n, g, t.data()) : 0;
  SquaresScalar(x, done, n, g, t.data());
  return Mean(t.data(), n);
}

float QuantizedMse(const float* x, int64_t n, const Grid<float>& g) {
  std::vector<float>& t = Squares<float>(n);
  SquaresScalar(x, 0, n, g, t.data());
  return Mean(t.data(), n);
}

}  // namespace quantd::quantizers::internal
