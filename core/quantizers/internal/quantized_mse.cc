#include "core/quantizers/internal/quantized_mse.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
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

// The squared errors of a row on a grid, four doubles at a time, summed in
// NumPy's pairwise order (PairwiseSum, numpy_compat.h) as they are made:
// no buffer of squares is written and read back.
//
// A square is QuantizeOne's, operation by operation. The clip is max(lo, v)
// then min(hi, c): vmaxpd/vminpd return their second operand when the
// compare is false or unordered, i.e. `if (v < lo)` / `if (c > hi)` with NaN
// passing through. RoundHalfEven (copysign((|y| + 2^52) - 2^52, y) where
// |y| < 2^52, else y) is vroundpd to nearest even: the same value for every
// input, signed zeros and NaN included.
class SquaresSumAvx2 {
 public:
  __attribute__((target("avx2"))) explicit SquaresSumAvx2(const Grid<double>& g)
      : g_(g),
        lo_(_mm256_set1_pd(g.lo)),
        hi_(_mm256_set1_pd(g.hi)),
        delta_(_mm256_set1_pd(g.delta)) {}

  // PairwiseSum of the n squares of x.
  __attribute__((target("avx2"))) double Sum(const double* x, int64_t n) const {
    if (n < 8) {
      double res = 0.0;
      for (int64_t i = 0; i < n; ++i) res += Square(x[i]);
      return res;
    }
    if (n <= 128) {
      __m256d r03 = Squares4(x), r47 = Squares4(x + 4);
      int64_t i = 8;
      for (; i < n - (n % 8); i += 8) {
        r03 = _mm256_add_pd(r03, Squares4(x + i));
        r47 = _mm256_add_pd(r47, Squares4(x + i + 4));
      }
      alignas(32) double r[8];
      _mm256_store_pd(r, r03);
      _mm256_store_pd(r + 4, r47);
      double res =
          ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
      for (; i < n; ++i) res += Square(x[i]);
      return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return Sum(x, n2) + Sum(x + n2, n - n2);
  }

 private:
  __attribute__((target("avx2"))) __m256d Squares4(const double* x) const {
    const __m256d v = _mm256_loadu_pd(x);
    const __m256d c = _mm256_min_pd(hi_, _mm256_max_pd(lo_, v));
    const __m256d y = _mm256_div_pd(_mm256_sub_pd(c, lo_), delta_);
    const __m256d r =
        _mm256_round_pd(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256d q = _mm256_add_pd(_mm256_mul_pd(delta_, r), lo_);
    const __m256d d = _mm256_sub_pd(v, q);
    return _mm256_mul_pd(d, d);
  }
  double Square(double v) const {
    const double d = v - QuantizeOne(v, g_);
    return d * d;
  }

  Grid<double> g_;
  __m256d lo_, hi_, delta_;
};

__attribute__((target("avx2"))) double QuantizedMseAvx2(const double* x,
                                                        int64_t n,
                                                        const Grid<double>& g) {
  const double sum = SquaresSumAvx2(g).Sum(x, n);
  // Clean AVX state before the scalar code that follows (see
  // core/stats/batch_histogram.cc: a dirty upper state slowed later stages).
  _mm256_zeroupper();
  return sum / static_cast<double>(n);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

}  // namespace

double QuantizedMseScalar(const double* x, int64_t n, const Grid<double>& g) {
  std::vector<double>& t = Squares<double>(n);
  SquaresScalar(x, 0, n, g, t.data());
  return Mean(t.data(), n);
}

double QuantizedMse(const double* x, int64_t n, const Grid<double>& g) {
  if (kHaveAvx2) return QuantizedMseAvx2(x, n, g);
  std::vector<double>& t = Squares<double>(n);
  SquaresScalar(x, 0, n, g, t.data());
  return Mean(t.data(), n);
}

std::vector<double> RowExtremes(const double* x, int64_t n, int64_t k) {
  if (n <= 2 * k) {
    std::vector<double> all(x, x + n);
    std::sort(all.begin(), all.end());
    return all;
  }
  // One pass keeping the k smallest and the k largest seen, each sorted: a
  // value enters (by insertion) only when it beats the k-th, rare past the
  // first values of a row. The k smallest (largest) values of a row are the
  // same multiset whichever positions hold them: the output of sorting.
  std::vector<double> out(2 * k);
  std::copy(x, x + k, out.begin());
  std::sort(out.begin(), out.begin() + k);
  std::copy(out.begin(), out.begin() + k, out.begin() + k);
  double* lo = out.data();
  double* hi = out.data() + k;
  for (int64_t i = k; i < n; ++i) {
    const double v = x[i];
    if (v < lo[k - 1]) {
      int64_t j = k - 1;
      for (; j > 0 && lo[j - 1] > v; --j) lo[j] = lo[j - 1];
      lo[j] = v;
    }
    if (v > hi[0]) {
      int64_t j = 0;
      for (; j + 1 < k && hi[j + 1] < v; ++j) hi[j] = hi[j + 1];
      hi[j] = v;
    }
  }
  return out;
}

bool QuantizedMseExceeds(const double* extremes, int64_t m, int64_t n,
                         const Grid<double>& g, double loss) {
  const double* sorted = extremes;
  constexpr double kHuge = 1e100;
  // Every term is a square of a difference of values below 1e100: finite.
  if (m <= 0 || m > n || n > (int64_t{1} << 40) || !(loss > 1e-250) ||
      !(loss < kHuge) || !(std::fabs(sorted[0]) < kHuge) ||
      !(std::fabs(sorted[m - 1]) < kHuge) || !(std::fabs(g.lo) < kHuge) ||
      !(std::fabs(g.hi) < kHuge) || !(g.delta > 0) || !(g.delta < kHuge)) {
    return false;
  }
  // Any order of summing n non-negative terms is within (n - 1) * 2^-53 of
  // the exact sum (relative, first order), a sum of some of them likewise,
  // the mean adds a rounding: a sum of some terms above `limit` puts the
  // mean above `loss` whatever the order. 8 (n + 4) * 2^-53 (twice that as
  // 1 / (1 - x) <= 1 + 2x) and 2^-40 cover those roundings and limit's own.
  const double nd = static_cast<double>(n);
  const double limit = loss * nd * (1.0 + (nd + 4) * 0x1p-49) * (1.0 + 0x1p-40);
  // QuantizeOne of v < lo is QuantizeOne(lo), of v > hi QuantizeOne(hi):
  // the clip makes them equal before the rounding.
  double q_lo = 0, q_hi = 0;
  bool have_lo = false, have_hi = false;
  // The clipped values from both ends inward: largest errors first.
  double sum = 0;
  int64_t l = 0, r = m - 1;
  while (l <= r) {
    const bool below = sorted[l]<g.lo, above = sorted[r]> g.hi;
    if (!below && !above) break;
    if (below) {
      if (!have_lo) q_lo = QuantizeOne(g.lo, g), have_lo = true;
      const double d = sorted[l++] - q_lo;
      sum += d * d;
    }
    if (above && l <= r) {
      if (!have_hi) q_hi = QuantizeOne(g.hi, g), have_hi = true;
      const double d = sorted[r--] - q_hi;
      sum += d * d;
    }
    if (sum > limit) return true;
  }
  return false;
}

float QuantizedMse(const float* x, int64_t n, const Grid<float>& g) {
  std::vector<float>& t = Squares<float>(n);
  SquaresScalar(x, 0, n, g, t.data());
  return Mean(t.data(), n);
}

}  // namespace quantd::quantizers::internal
