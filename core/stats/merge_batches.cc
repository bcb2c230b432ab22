// MergeBatches: MergeHistograms (histogram_collector.cc) of the compact
// per-sample histograms calibration keeps, the same bytes with less work per
// batch. It runs once per tensor after the float pass; on small models it
// was a third of the whole job.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/quantizers/internal/numpy_compat.h"
#include "core/stats/batch_histogram.h"
#include "core/stats/histogram_collector.h"
#include "core/util/status_macros.h"

namespace quantd::stats {
namespace {

// Buffers reused across the batches of one merge.
struct MergeScratch {
  std::vector<double> edges;  // the batch's float32 edges, widened
  std::vector<double> cum;    // its cumulative counts, 0 first
  std::vector<double> slope;  // cum's slope between edges j and j + 1
  std::vector<double> at;     // np.interp at the grid's inside points
};

const bool kHaveAvx = __builtin_cpu_supports("avx");

// Float32Edges(first, last, num - 1) widened to double: linspace's
// i * step + start in float64, then float32.
void WideFloat32Edges(double first, double last, int num, double* edges) {
  quantizers::internal::LinspaceInto(first, last, num, edges);
  for (int j = 0; j < num; ++j) edges[j] = static_cast<float>(edges[j]);
}

// The same four at a time where linspace takes its usual branch (a nonzero
// step): the same IEEE operations (product, sum, two conversions), no FMA.
// `step` is linspace's (last - first) / (num - 1), nonzero.
__attribute__((target("avx"))) void WideFloat32EdgesAvx(double first,
                                                        double last, int num,
                                                        double step,
                                                        double* edges) {
  const __m256d vstep = _mm256_set1_pd(step), vfirst = _mm256_set1_pd(first);
  const __m256d four = _mm256_set1_pd(4.0);
  __m256d idx = _mm256_setr_pd(0.0, 1.0, 2.0, 3.0);
  int j = 0;
  for (; j + 4 <= num - 1; j += 4) {
    const __m256d e = _mm256_add_pd(_mm256_mul_pd(idx, vstep), vfirst);
    _mm256_storeu_pd(edges + j, _mm256_cvtps_pd(_mm256_cvtpd_ps(e)));
    idx = _mm256_add_pd(idx, four);
  }
  _mm256_zeroupper();
  for (; j < num - 1; ++j) {
    edges[j] = static_cast<float>(static_cast<double>(j) * step + first);
  }
  edges[num - 1] = static_cast<float>(last);
}

// slope[j] = (cum[j + 1] - cum[j]) / (edges[j + 1] - edges[j]), j < n.
void Slopes(const double* cum, const double* edges, int n, double* slope) {
  for (int j = 0; j < n; ++j) {
    slope[j] = (cum[j + 1] - cum[j]) / (edges[j + 1] - edges[j]);
  }
}

__attribute__((target("avx"))) void SlopesAvx(const double* cum,
                                              const double* edges, int n,
                                              double* slope) {
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m256d dy =
        _mm256_sub_pd(_mm256_loadu_pd(cum + j + 1), _mm256_loadu_pd(cum + j));
    const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(edges + j + 1),
                                     _mm256_loadu_pd(edges + j));
    _mm256_storeu_pd(slope + j, _mm256_div_pd(dy, dx));
  }
  _mm256_zeroupper();
  Slopes(cum + j, edges + j, n - j, slope + j);
}

// BatchHistogram::Edges, the cumulative counts AddInterpolated builds and
// np.interp's slopes between them, into reused buffers.
void Prepare(const BatchHistogram& b, MergeScratch* s) {
  const int num = static_cast<int>(b.counts.size()) + 1;
  s->edges.resize(num);
  s->cum.resize(num);
  s->slope.resize(num - 1);
  double* edges = s->edges.data();
  double* cum = s->cum.data();
  const double step = (b.last - b.first) / (num - 1);
  if (kHaveAvx && num > 1 && step != 0) {
    WideFloat32EdgesAvx(b.first, b.last, num, step, edges);
  } else {
    WideFloat32Edges(b.first, b.last, num, edges);
  }
  // Every partial sum is an integer below 2^53 (a tensor has fewer than 2^32
  // values), so summing in integers gives the float64 chain's exact values.
  int64_t total = 0;
  cum[0] = 0.0;
  for (int j = 0; j + 1 < num; ++j) {
    total += b.counts[j];
    cum[j + 1] = static_cast<double>(total);
  }
  // np.interp divides up front too when the points outnumber the edges: the
  // same quotients, as independent divisions instead of one in each point's
  // dependency chain.
  if (kHaveAvx) {
    SlopesAvx(cum, edges, num - 1, s->slope.data());
  } else {
    Slopes(cum, edges, num - 1, s->slope.data());
  }
}

// np.interp(v, edges, cum) for edges[0] <= v <= edges.back(), with k the
// largest index where edges[k] <= v (InterpSorted's arithmetic).
inline double InterpAt(const MergeScratch& s, int64_t k, double v) {
  const double* xp = s.edges.data();
  const double* fp = s.cum.data();
  if (k == static_cast<int64_t>(s.edges.size()) - 1 || xp[k] == v) {
    return fp[k];
  }
  double r = s.slope[k] * (v - xp[k]) + fp[k];
  if (std::isnan(r)) {
    r = s.slope[k] * (v - xp[k + 1]) + fp[k + 1];
    if (std::isnan(r) && fp[k] == fp[k + 1]) r = fp[k];
  }
  return r;
}

// np.interp of the grid's points on (edges, cum), differenced into the
// grid's bins: AddInterpolated's arithmetic, point for point. Two savings:
// - points below the first edge interpolate to cum[0] and points above the
//   last to the total, so a bin with both ends on one side gains exactly
//   +0.0 and is skipped (counts are never -0.0);
// - the bracketing edge of each point is estimated from the edges' near-
//   uniform spacing, then corrected by comparisons: the same index as
//   InterpSorted's walk, without its unpredictable branches.
void AddBatch(MergeScratch& s, quantizers::Histogram* merged) {
  const std::vector<double>& x = merged->edges;
  const double* xp = s.edges.data();
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t lenxp = static_cast<int64_t>(s.edges.size());
  const double lo = xp[0], hi = xp[lenxp - 1];
  // Points [begin, end) lie within [lo, hi].
  const int64_t begin = std::lower_bound(x.begin(), x.end(), lo) - x.begin();
  const int64_t end = std::upper_bound(x.begin(), x.end(), hi) - x.begin();
  double* counts = merged->counts.data();
  if (begin == end) {
    // No point inside: at most the one bin around the batch gains it all.
    if (begin > 0 && end < n) counts[begin - 1] += s.cum.back();
    return;
  }
  const double per_edge = static_cast<double>(lenxp - 1) / (hi - lo);
  const bool estimate = std::isfinite(per_edge) && per_edge > 0;
  const double last_index = static_cast<double>(lenxp - 1);
  // The interpolated values first (each point's own), then their
  // differences: two short loops instead of one with a long body.
  s.at.resize(end - begin + 2);
  double* at = s.at.data() + 1;  // at[i - begin]; at[-1] and at[end - begin]
  at[-1] = s.cum.front();        // the values just outside
  at[end - begin] = s.cum.back();
  int64_t j = 0;  // edges[j] <= every point still to come
  for (int64_t i = begin; i < end; ++i) {
    const double v = x[i];
    int64_t k = j;
    if (estimate) {
      const double guess = std::min((v - lo) * per_edge, last_index);
      k = std::max(j, static_cast<int64_t>(guess));
    }
    while (xp[k] > v) --k;  // stops at j at the latest: edges[j] <= v
    while (k + 1 < lenxp && xp[k + 1] <= v) ++k;
    j = k;
    at[i - begin] = InterpAt(s, k, v);
  }
  // Bin i lies between points i and i + 1.
  const int64_t first_bin = std::max<int64_t>(begin - 1, 0);
  const int64_t end_bin = std::min<int64_t>(end, n - 1);
  for (int64_t i = first_bin; i < end_bin; ++i) {
    counts[i] += at[i + 1 - begin] - at[i - begin];
  }
}

}  // namespace

absl::StatusOr<quantizers::Histogram> MergeBatches(
    const std::vector<BatchHistogram>& batches, int n_bins) {
  if (batches.empty())
    return absl::FailedPreconditionError("no batch to merge");
  // The grid's ends: the float32 end edges of every batch.
  float mn = static_cast<float>(batches[0].first);
  float mx = static_cast<float>(batches[0].last);
  for (const BatchHistogram& b : batches) {
    mn = std::min(mn, static_cast<float>(b.first));
    mx = std::max(mx, static_cast<float>(b.last));
  }
  ASSIGN_OR_RETURN(quantizers::Histogram out, MergeGrid(mn, mx, n_bins));
  MergeScratch scratch;
  for (const BatchHistogram& b : batches) {
    Prepare(b, &scratch);
    AddBatch(scratch, &out);
  }
  return out;
}

}  // namespace quantd::stats
