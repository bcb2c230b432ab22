#include "core/quantizers/internal/mse_search.h"

#include <immintrin.h>

#include <cmath>
#include <vector>

#include "core/quantizers/internal/quantized_mse.h"

namespace quantd::quantizers::internal {
namespace {

// SymmetricGrid<double, double>(t, n_bits, true) of four thresholds, each
// step of SymmetricRange, FixRange and UniformGrid as a vector operation in
// the same order (no fused multiply-adds: the target has no FMA). The
// booleans of FixRange are 1.0 / 0.0 multiplied in literally, as there;
// RoundHalfEven is vroundpd to nearest even (see quantized_mse.cc).
__attribute__((target("avx2"))) void SymmetricGrids4(const double* t,
                                                     int n_bits,
                                                     Grid<double>* out) {
  const __m256d one = _mm256_set1_pd(1.0), zero = _mm256_setzero_pd();
  const __m256d steps =
      _mm256_set1_pd(static_cast<double>((int64_t{1} << n_bits) - 1));
  const __m256d th = _mm256_loadu_pd(t);
  // SymmetricRange: a = -T * 1 (a sign flip), b = T - T / 2^(n - 1).
  const __m256d d0 = _mm256_div_pd(
      th, _mm256_set1_pd(static_cast<double>(int64_t{1} << (n_bits - 1))));
  const __m256d a = _mm256_mul_pd(_mm256_xor_pd(th, _mm256_set1_pd(-0.0)), one);
  const __m256d b = _mm256_sub_pd(th, d0);
  // FixRange(a, b).
  const __m256d min_positive = _mm256_cmp_pd(a, zero, _CMP_GT_OQ);
  const __m256d max_negative = _mm256_cmp_pd(b, zero, _CMP_LT_OQ);
  const __m256d scale = _mm256_div_pd(_mm256_sub_pd(b, a), steps);
  __m256d min_adj = _mm256_mul_pd(
      scale, _mm256_round_pd(_mm256_div_pd(a, scale),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  __m256d max_adj = _mm256_add_pd(_mm256_sub_pd(b, a), min_adj);
  const __m256d mid =
      _mm256_andnot_pd(_mm256_or_pd(min_positive, max_negative), one);
  min_adj = _mm256_add_pd(_mm256_mul_pd(min_adj, mid),
                          _mm256_mul_pd(_mm256_and_pd(max_negative, one), a));
  max_adj = _mm256_add_pd(_mm256_mul_pd(max_adj, mid),
                          _mm256_mul_pd(_mm256_and_pd(min_positive, one), b));
  // UniformGrid: delta = (fb - fa) / (2^n - 1).
  const __m256d delta = _mm256_div_pd(_mm256_sub_pd(max_adj, min_adj), steps);
  alignas(32) double lo[4], hi[4], dl[4];
  _mm256_store_pd(lo, min_adj);
  _mm256_store_pd(hi, max_adj);
  _mm256_store_pd(dl, delta);
  for (int i = 0; i < 4; ++i) out[i] = {lo[i], hi[i], dl[i]};
}

// Groups of four; returns how many it did.
__attribute__((target("avx2"))) int64_t SymmetricGridsAvx2(const double* t,
                                                           int64_t k,
                                                           int n_bits,
                                                           Grid<double>* out) {
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) SymmetricGrids4(t + i, n_bits, out + i);
  _mm256_zeroupper();
  return i;
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

}  // namespace

void SymmetricGrids(const double* t, int64_t k, int n_bits, Grid<double>* out) {
  int64_t i = 0;
  // 2^(n_bits - 1) and 2^n_bits - 1 as SymmetricGrid computes them.
  if (kHaveAvx2 && n_bits >= 1 && n_bits <= 62) {
    i = SymmetricGridsAvx2(t, k, n_bits, out);
  }
  for (; i < k; ++i) out[i] = SymmetricGrid<double, double>(t[i], n_bits, true);
}

int PrunedMseArgMin(const double* x, int64_t n, const double* extremes,
                    int64_t m, const double* cands, int k, int n_bits,
                    double* best_loss) {
  thread_local std::vector<Grid<double>> grids;
  grids.resize(k);
  SymmetricGrids(cands, k, n_bits, grids.data());
  int best = -1;
  double bl = 0;
  for (int i = k - 1; i >= 0; --i) {
    // A grid that clips none of the extremes clips nothing: no proof.
    const bool clips =
        m > 0 && (extremes[0] < grids[i].lo || extremes[m - 1] > grids[i].hi);
    if (best >= 0 && clips &&
        QuantizedMseExceeds(extremes, m, n, grids[i], bl)) {
      continue;
    }
    const double il = QuantizedMse(x, n, grids[i]);
    if (!std::isfinite(il)) return -1;
    if (best < 0 || il <= bl) {  // <=: the first index wins a tie
      best = i;
      bl = il;
    }
  }
  *best_loss = bl;
  return best;
}

}  // namespace quantd::quantizers::internal
