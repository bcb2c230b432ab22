#include "core/quantizers/error_functions.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/quantizers/internal/errors.h"
#include "core/quantizers/internal/kernels.h"
#include "core/quantizers/internal/sparse_sum.h"
#include "core/util/checked_region.h"

namespace quantd::quantizers {
namespace internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// _smooth_distribution: the result is float32 (probability.astype(float32)).
void Smooth(const std::vector<double>& p, std::vector<float>* out) {
  double min_nonzero = kInf;
  int64_t nonzero = 0;
  for (double v : p) {
    if (v != 0) {
      min_nonzero = std::min(min_nonzero, v);
      ++nonzero;
    }
  }
  const int64_t size = static_cast<int64_t>(p.size());
  const double smoothing = min_nonzero / (2.0 * static_cast<double>(size));
  const double zeros = static_cast<double>(size - nonzero);
  const double reduce = smoothing * zeros / static_cast<double>(nonzero);
  const float s32 = static_cast<float>(smoothing);
  const float r32 = static_cast<float>(-reduce);
  // correction = s * [p == 0] + (-r) * [p != 0], added in float32.
  const float corr_zero = s32 * 1.0f + r32 * 0.0f;
  const float corr_nonzero = s32 * 0.0f + r32 * 1.0f;
  out->resize(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    (*out)[i] =
        static_cast<float>(p[i]) + (p[i] == 0 ? corr_zero : corr_nonzero);
  }
}

}  // namespace

double KlHistogramCore(const double* edges, const double* q_edges,
                       const double* counts, int64_t n_bins, double range_min,
                       double range_max, double cmp_min, double cmp_max) {
  const int64_t n_edges = n_bins + 1;
  // _is_range_valid and _get_bins_indices_from_range.
  int64_t first_ge = -1, last_lt = -1;
  for (int64_t i = 0; i < n_edges; ++i) {
    if (first_ge < 0 && edges[i] >= cmp_min) first_ge = i;
    if (edges[i] < cmp_max) last_lt = i;
  }
  if (first_ge < 0 || last_lt < 0) return kInf;
  if (!(range_min < range_max)) return kInf;  // MCT asserts here.
  const int64_t first = std::max<int64_t>(first_ge - 1, 0);
  const int64_t last = last_lt;
  if (first > last) return kInf;  // MCT asserts here.
  if (first == last) return 0.0;
  const int64_t len = last - first;  // counts_subset length
  const double* sub = counts + first;
  const double* q_sub = q_edges + first;  // len + 1 values
  bool any = false;
  for (int64_t i = 0; i < len; ++i) any |= sub[i] != 0;
  if (!any) return kInf;
  // Scratch reused across the many evaluations of a search.
  thread_local std::vector<double> acc, qbc, p_fxp, p_float;
  thread_local std::vector<float> sf, sq, terms;
  acc.assign(sub, sub + len);
  acc[0] += PairwiseSum(counts, first);
  acc[len - 1] += PairwiseSum(counts + last, n_bins - last);
  // Spread each quantized level's mass over its non-empty bins.
  qbc.assign(len, 0.0);
  // Quantization is monotone, so equal quantized values form contiguous
  // runs of edges (np.unique + mask in MCT).
  for (int64_t s = 0; s < len;) {
    int64_t e = s;
    while (e < len && q_sub[e] == q_sub[s]) ++e;
    float positive = 0;
    for (int64_t k = s; k < e; ++k) {
      if (sub[k] > 0) positive += 1.0f;
    }
    const double sum = PairwiseSum(sub + s, e - s);
    const double rel = sum / (static_cast<double>(positive) + 1e-6);
    const float rel32 = static_cast<float>(rel);
    for (int64_t k = s; k < e; ++k) {
      qbc[k] = sub[k] > 0 ? static_cast<double>(rel32) : 0.0;
    }
    s = e;
  }
  const double qsum = PairwiseSum(qbc.data(), len);
  p_fxp.resize(len);
  p_float.resize(len);
  for (int64_t i = 0; i < len; ++i) p_fxp[i] = qbc[i] / qsum;
  const double asum = PairwiseSum(acc.data(), len);
  for (int64_t i = 0; i < len; ++i) p_float[i] = acc[i] / asum;
  Smooth(p_float, &sf);
  Smooth(p_fxp, &sq);
  terms.resize(len);
  // Runs of empty bins repeat the same pair: reuse the last log.
  float last_f = std::numeric_limits<float>::quiet_NaN(), last_q = last_f;
  float last_term = 0;
  for (int64_t i = 0; i < len; ++i) {
    if (sf[i] != last_f || sq[i] != last_q) {
      last_f = sf[i];
      last_q = sq[i];
      last_term = sf[i] * internal::NumpyLogF32(sf[i] / sq[i]);
    }
    terms[i] = last_term;
  }
  return PairwiseSum(terms.data(), len);
}

KlHistogram MakeKlHistogram(const float* x, int64_t n) {
  KlHistogram h;
  HistogramF32(x, n, kHistogramBins, &h.edges, &h.counts);
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] != 0) h.nonzero.push_back(static_cast<int64_t>(i));
  }
  return h;
}

namespace {

// Smoothing constants of _smooth_distribution for a distribution of `size`
// entries with `nonzero` non-zero ones, the smallest being `min_nonzero`.
struct SmoothParams {
  float corr_zero, corr_nonzero;
};

SmoothParams SmoothFor(double min_nonzero, int64_t nonzero, int64_t size) {
  const double smoothing = min_nonzero / (2.0 * static_cast<double>(size));
  const double zeros = static_cast<double>(size - nonzero);
  const double reduce = smoothing * zeros / static_cast<double>(nonzero);
  const float s32 = static_cast<float>(smoothing);
  const float r32 = static_cast<float>(-reduce);
  return {s32 * 1.0f + r32 * 0.0f, s32 * 0.0f + r32 * 1.0f};
}

// _kl_error_histogram for a histogram with integer counts, touching only the
// non-empty bins (a weight row fills few of the 2048 bins). `quantize(i)`
// is the quantized value of edge i. Same result as KlHistogramCore.
template <typename Quantize>
double KlSparse(const KlHistogram& h, const Quantize& quantize,
                double range_min, double range_max, double cmp_min,
                double cmp_max) {
  const std::vector<double>& edges = h.edges;
  const int64_t first_ge =
      std::lower_bound(edges.begin(), edges.end(), cmp_min) - edges.begin();
  const int64_t last_lt =
      (std::lower_bound(edges.begin(), edges.end(), cmp_max) - edges.begin()) -
      1;
  if (first_ge >= static_cast<int64_t>(edges.size()) || last_lt < 0)
    return kInf;
  if (!(range_min < range_max)) return kInf;
  const int64_t first = std::max<int64_t>(first_ge - 1, 0);
  const int64_t last = last_lt;
  if (first > last) return kInf;
  if (first == last) return 0.0;
  const int64_t len = last - first;
  const auto nz_begin =
      std::lower_bound(h.nonzero.begin(), h.nonzero.end(), first);
  const auto nz_end = std::lower_bound(nz_begin, h.nonzero.end(), last);
  if (nz_begin == nz_end) return kInf;
  // Integer counts: sums are exact in any order.
  double left = 0, right = 0;
  for (auto it = h.nonzero.begin(); it != nz_begin; ++it) left += h.counts[*it];
  for (auto it = nz_end; it != h.nonzero.end(); ++it) right += h.counts[*it];
  // acc (clipped counts) and qbc (spread quantized counts), sparse.
  std::vector<std::pair<int64_t, double>> acc, qbc;
  // Sized once: their regrowth was 5% of the weight searches under ASan.
  acc.reserve((nz_end - nz_begin) + 2);
  qbc.reserve(nz_end - nz_begin);
  for (auto it = nz_begin; it != nz_end;) {
    const double q = quantize(*it);
    auto end = it;
    double sum = 0;
    float positive = 0;
    while (end != nz_end && quantize(*end) == q) {
      sum += h.counts[*end];
      positive += 1.0f;
      ++end;
    }
    const float rel32 =
        static_cast<float>(sum / (static_cast<double>(positive) + 1e-6));
    for (; it != end; ++it) {
      acc.push_back({*it - first, h.counts[*it]});
      qbc.push_back({*it - first, static_cast<double>(rel32)});
    }
  }
  if (left != 0) {
    if (!acc.empty() && acc.front().first == 0) {
      acc.front().second += left;
    } else {
      acc.insert(acc.begin(), {0, left});
    }
  }
  if (right != 0) {
    if (!acc.empty() && acc.back().first == len - 1) {
      acc.back().second += right;
    } else {
      acc.push_back({len - 1, right});
    }
  }
  const double qsum = SparsePairwiseSummer<double>(qbc, 0.0).Sum(len);
  const double asum = SparsePairwiseSummer<double>(acc, 0.0).Sum(len);
  // Non-zero probabilities, then the smoothing of each distribution.
  double min_q = kInf, min_f = kInf;
  int64_t nz_q = 0, nz_f = 0;
  for (auto& [k, v] : qbc) {
    v /= qsum;
    if (v != 0) {
      min_q = std::min(min_q, v);
      ++nz_q;
    }
  }
  for (auto& [k, v] : acc) {
    v /= asum;
    if (v != 0) {
      min_f = std::min(min_f, v);
      ++nz_f;
    }
  }
  const SmoothParams sq = SmoothFor(min_q, nz_q, len);
  const SmoothParams sf = SmoothFor(min_f, nz_f, len);
  auto smooth = [](double p, const SmoothParams& s) {
    return static_cast<float>(p) + (p == 0 ? s.corr_zero : s.corr_nonzero);
  };
  const float f0 = smooth(0.0, sf), q0 = smooth(0.0, sq);
  const float t00 = f0 * NumpyLogF32(f0 / q0);
  // Merge the two sparse supports into the exceptional terms.
  std::vector<std::pair<int64_t, float>> terms;
  terms.reserve(acc.size() + qbc.size());
  size_t a = 0, b = 0;
  while (a < acc.size() || b < qbc.size()) {
    int64_t k;
    double pf = 0, pq = 0;
    if (b >= qbc.size() || (a < acc.size() && acc[a].first < qbc[b].first)) {
      k = acc[a].first;
      pf = acc[a++].second;
    } else if (a >= acc.size() || qbc[b].first < acc[a].first) {
      k = qbc[b].first;
      pq = qbc[b++].second;
    } else {
      k = acc[a].first;
      pf = acc[a++].second;
      pq = qbc[b++].second;
    }
    const float vf = smooth(pf, sf), vq = smooth(pq, sq);
    terms.push_back({k, vf * NumpyLogF32(vf / vq)});
  }
  return SparsePairwiseSummer<float>(terms, t00).Sum(len);
}

}  // namespace

double KlTensorErrorFromHistogram(const KlHistogram& h, double range_min,
                                  double range_max, int n_bits,
                                  RangeKind kind) {
  if (range_max <= range_min) return kInf;
  const std::vector<double>& edges = h.edges;
  switch (kind) {
    case RangeKind::kScalar: {
      const auto g = UniformGrid<double, float>(range_min, range_max, n_bits);
      return KlSparse(
          h,
          [&](int64_t i) {
            return static_cast<double>(
                QuantizeOne(static_cast<float>(edges[i]), g));
          },
          range_min, range_max, static_cast<float>(range_min),
          static_cast<float>(range_max));
    }
    case RangeKind::kF32Array: {
      const auto g = UniformGrid<float, float>(
          static_cast<float>(range_min), static_cast<float>(range_max), n_bits);
      return KlSparse(
          h,
          [&](int64_t i) {
            return static_cast<double>(
                QuantizeOne(static_cast<float>(edges[i]), g));
          },
          range_min, range_max, range_min, range_max);
    }
    case RangeKind::kF64Array: {
      const auto g = UniformGrid<double, double>(range_min, range_max, n_bits);
      return KlSparse(
          h, [&](int64_t i) { return QuantizeOne(edges[i], g); }, range_min,
          range_max, range_min, range_max);
    }
  }
  return kInf;
}

double KlTensorErrorImpl(const float* x, int64_t n, double range_min,
                         double range_max, int n_bits, RangeKind kind) {
  if (range_max <= range_min) return kInf;
  return KlTensorErrorFromHistogram(MakeKlHistogram(x, n), range_min, range_max,
                                    n_bits, kind);
}

namespace {

// t[i] = f(q_edges[i] - edges[i]) * counts[i], i < n_bins: reads and writes
// exactly those elements, which the caller checks once under ASan
// (core/util/checked_region.h). fabs as a builtin: an inline wrapper would
// not be inlined into this function under ASan.
QUANTD_UNCHECKED_ACCESSES void PointTerms(ErrorMethod method,
                                          const double* edges,
                                          const double* q_edges,
                                          const double* counts, int64_t n_bins,
                                          double p, bool f32_edges, double* t) {
  for (int64_t i = 0; i < n_bins; ++i) {
    // f(d) * 0 is +0 for the finite f(d) here: skip the work (pow) for empty
    // bins; the pairwise sum below still sees every element.
    if (counts[i] == 0) {
      t[i] = 0;
      continue;
    }
    double v;
    if (f32_edges) {
      const float d =
          static_cast<float>(q_edges[i]) - static_cast<float>(edges[i]);
      switch (method) {
        case ErrorMethod::kMae:
          v = __builtin_fabsf(d);
          break;
        case ErrorMethod::kLp:
          v = std::pow(__builtin_fabsf(d), static_cast<float>(p));
          break;
        default:
          v = d * d;
          break;
      }
    } else {
      const double d = q_edges[i] - edges[i];
      switch (method) {
        case ErrorMethod::kMae:
          v = __builtin_fabs(d);
          break;
        case ErrorMethod::kLp:
          v = std::pow(__builtin_fabs(d), p);
          break;
        default:
          v = d * d;
          break;
      }
    }
    t[i] = v * counts[i];
  }
}

}  // namespace

double HistogramPointError(ErrorMethod method, const double* edges,
                           const double* q_edges, const double* counts,
                           int64_t n_bins, double p, bool f32_edges) {
  std::vector<double> t(n_bins);
  if (n_bins > 0) {
    const size_t bytes = static_cast<size_t>(n_bins) * sizeof(double);
    CheckRegion(edges, bytes);
    CheckRegion(q_edges, bytes);
    CheckRegion(counts, bytes);
  }
  PointTerms(method, edges, q_edges, counts, n_bins, p, f32_edges, t.data());
  return PairwiseSum(t.data(), n_bins) / PairwiseSum(counts, n_bins);
}

}  // namespace internal

double TensorError(ErrorMethod method, absl::Span<const float> x,
                   absl::Span<const float> q, double p,
                   absl::Span<const float> hessian) {
  if (method == ErrorMethod::kKl)
    return std::numeric_limits<double>::quiet_NaN();
  std::vector<float> scratch;
  return internal::PointwiseError<float>(method, x.data(), q.data(),
                                         static_cast<int64_t>(x.size()), p,
                                         hessian.data(), &scratch);
}

double TensorErrorF64(ErrorMethod method, absl::Span<const double> x,
                      absl::Span<const double> q, double p,
                      absl::Span<const float> hessian) {
  if (method == ErrorMethod::kKl)
    return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> scratch;
  return internal::PointwiseError<double>(method, x.data(), q.data(),
                                          static_cast<int64_t>(x.size()), p,
                                          hessian.data(), &scratch);
}

double KlTensorError(absl::Span<const float> x, double range_min,
                     double range_max, int n_bits, bool range_is_array) {
  return internal::KlTensorErrorImpl(
      x.data(), static_cast<int64_t>(x.size()), range_min, range_max, n_bits,
      range_is_array ? internal::RangeKind::kF64Array
                     : internal::RangeKind::kScalar);
}

double HistogramError(ErrorMethod method, const Histogram& histogram,
                      absl::Span<const double> q_edges, double p) {
  return internal::HistogramPointError(
      method, histogram.edges.data(), q_edges.data(), histogram.counts.data(),
      static_cast<int64_t>(histogram.counts.size()), p,
      histogram.float32_edges);
}

double KlHistogramError(const Histogram& histogram,
                        absl::Span<const double> q_edges, double range_min,
                        double range_max) {
  double cmin = range_min, cmax = range_max;
  if (histogram.float32_edges) {
    cmin = static_cast<float>(range_min);
    cmax = static_cast<float>(range_max);
  }
  return internal::KlHistogramCore(
      histogram.edges.data(), q_edges.data(), histogram.counts.data(),
      static_cast<int64_t>(histogram.counts.size()), range_min, range_max, cmin,
      cmax);
}

}  // namespace quantd::quantizers
