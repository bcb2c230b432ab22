#include "core/stats/batch_histogram.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/quantizers/internal/numpy_compat.h"
#include "core/stats/histogram_collector.h"

namespace quantd::stats {
namespace {

struct MinMax {
  float min, max;
  bool nan;
};

MinMax MinMaxScalar(const float* x, int64_t n, MinMax m) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    m.min = v < m.min ? v : m.min;
    m.max = m.max < v ? v : m.max;
    m.nan |= v != v;
  }
  return m;
}

__attribute__((target("avx2"))) float Reduce(__m256 v, bool is_min) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float r = lanes[0];
  for (int l = 1; l < 8; ++l) {
    r = is_min ? (lanes[l] < r ? lanes[l] : r) : (r < lanes[l] ? lanes[l] : r);
  }
  return r;
}

// Values only: the sign of a zero minimum or maximum is fixed by the caller.
__attribute__((target("avx2"))) MinMax MinMaxAvx2(const float* x, int64_t n) {
  __m256 mn0 = _mm256_set1_ps(x[0]), mn1 = mn0, mx0 = mn0, mx1 = mn0;
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    mn0 = _mm256_min_ps(mn0, a);
    mn1 = _mm256_min_ps(mn1, b);
    mx0 = _mm256_max_ps(mx0, a);
    mx1 = _mm256_max_ps(mx1, b);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  MinMax m{Reduce(_mm256_min_ps(mn0, mn1), true),
           Reduce(_mm256_max_ps(mx0, mx1), false),
           _mm256_movemask_ps(nan) != 0};
  // Clean upper halves before non-VEX code: GCC leaves them dirty on a tail
  // call, and SSE code after it (the threshold searches) ran 4-5x slower.
  _mm256_zeroupper();
  return MinMaxScalar(x + i, n - i, m);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

// _get_outer_edges' ends to np.linspace in float64, cast to float32.
std::vector<float> Float32Edges(double first, double last, int n_bins) {
  const std::vector<double> lin =
      quantizers::internal::Linspace(first, last, n_bins + 1);
  return std::vector<float>(lin.begin(), lin.end());
}

// NumPy 1.24's _histogram: f = (x - first) * norm with norm a float64
// scalar; value-based casting keeps the product float32 when |norm| < 3.4e38
// (min_scalar_type), else float64. Then the +-1 corrections against the
// float32 edges; the last bin is closed.
struct Binning {
  const float* edges;  // n_bins + 1
  int n_bins;
  float first;
  double norm;
  bool f32;
  float low, high;     // the batch's min and max
  double start, step;  // Linspace's: edge i < n_bins is float(i * step + start)
  // 0, or a distance in bins from every edge beyond which the index estimate
  // needs no correction (SafeMargin).
  double margin;

  int64_t Bin(float v) const {
    int64_t idx =
        f32 ? static_cast<int64_t>((v - first) * static_cast<float>(norm))
            : static_cast<int64_t>(static_cast<double>(v - first) * norm);
    if (idx == n_bins) --idx;
    if (v < edges[idx]) --idx;
    if (v >= edges[idx + 1] && idx != n_bins - 1) ++idx;
    return idx;
  }
};

// How far (in bins) the float32 index estimate f = (v - first) * norm can
// be from where v lies among the float32 edges; 0 when the bound does not
// hold or is too wide to be worth it. With R(v) = (v - first) * norm in
// exact arithmetic (monotone): |f - R(v)| <= 3.1 * 2^-24 * (n_bins + 1)
// (three float32 roundings: the difference, norm, the product), and edge i
// has |R(edge_i) - i| <= n_bins * 2^-23 (norm's float32 width) + 1.01 *
// 2^-24 * max(|first|, |last|) * norm (the edge's float32 rounding). Where
// f's fraction is farther than the sum of both from 0 and 1, int(f) is
// v's bin: neither correction of Bin can apply. Twice the sum is used.
double SafeMargin(double first, double last, int n_bins, double norm,
                  bool f32) {
  if (!f32 || first != static_cast<float>(first) ||
      last != static_cast<float>(last) || !(norm > 0)) {
    return 0;
  }
  const double magnitude = std::max(std::fabs(first), std::fabs(last));
  const double e_f = 3.1 * 0x1p-24 * (n_bins + 1);
  const double e_edges = n_bins * 0x1p-23 + 1.01 * 0x1p-24 * magnitude * norm;
  const double margin = 2 * (e_f + e_edges);
  return margin < 0.05 ? margin : 0;
}

// One count table: it stays in L1 beside the streamed values. Four tables
// (so that runs of one value do not wait on one counter) were 12% slower on
// this project's machine (AMD EPYC), ReLU-like data included.
void CountScalar(const float* x, int64_t n, const Binning& b, uint32_t* t) {
  for (int64_t i = 0; i < n; ++i) ++t[b.Bin(x[i])];
}

// Edges idx of eight lanes as Linspace computes them (i * step + start in
// float64, then float32), without loading them: AVX2 gathers were slower
// than scalar loads on this project's machine, this is faster than both.
__attribute__((target("avx2"))) inline __m256 EdgesAt(__m256i idx, __m256d step,
                                                      __m256d start) {
  const __m256d a = _mm256_add_pd(
      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(idx)), step),
      start);
  const __m256d c = _mm256_add_pd(
      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(idx, 1)), step),
      start);
  return _mm256_set_m128(_mm256_cvtpd_ps(c), _mm256_cvtpd_ps(a));
}

// ++t[idx[l]] for the eight lanes, a lane of `known` on its spare slot
// instead (its value is counted apart), the indices taken from registers
// two at a time (a store of the vector and eight loads of it were slower:
// most of the binning's time).
__attribute__((target("avx2"))) inline void Increment(__m256i bins,
                                                      __m256 known,
                                                      __m256 spare,
                                                      uint32_t* t) {
  const __m256i idx = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(bins), spare, known));
  const __m128i lo = _mm256_castsi256_si128(idx);
  const __m128i hi = _mm256_extracti128_si256(idx, 1);
  const uint64_t a = static_cast<uint64_t>(_mm_cvtsi128_si64(lo));
  const uint64_t b = static_cast<uint64_t>(_mm_extract_epi64(lo, 1));
  const uint64_t c = static_cast<uint64_t>(_mm_cvtsi128_si64(hi));
  const uint64_t d = static_cast<uint64_t>(_mm_extract_epi64(hi, 1));
  ++t[static_cast<uint32_t>(a)];
  ++t[a >> 32];
  ++t[static_cast<uint32_t>(b)];
  ++t[b >> 32];
  ++t[static_cast<uint32_t>(c)];
  ++t[c >> 32];
  ++t[static_cast<uint32_t>(d)];
  ++t[d >> 32];
}

// Spare slots after the n_bins counts of CountAvx2's table.
constexpr int kSpareSlots = 8;

// Binning::Bin on eight lanes (the float32 product only). Values equal to
// the batch's min or max (ReLU zeros, ReLU6 sixes) are counted in registers
// (popcounts), eight at once when a vector holds nothing else; in a mixed
// vector their lanes increment spare slots of their own, so that no counter
// takes several increments from one vector. `t` has n_bins + kSpareSlots
// entries.
__attribute__((target("avx2"))) void CountAvx2(const float* x, int64_t n,
                                               const Binning& b, uint32_t* t) {
  const __m256 first = _mm256_set1_ps(b.first);
  const __m256 norm = _mm256_set1_ps(static_cast<float>(b.norm));
  const __m256i top = _mm256_set1_epi32(b.n_bins);
  const __m256i last = _mm256_set1_epi32(b.n_bins - 1);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256d step = _mm256_set1_pd(b.step), start = _mm256_set1_pd(b.start);
  const __m256 last_edge = _mm256_set1_ps(b.edges[b.n_bins]);  // = stop
  const __m256 low = _mm256_set1_ps(b.low), high = _mm256_set1_ps(b.high);
  const int64_t low_bin = b.Bin(b.low), high_bin = b.Bin(b.high);
  const bool two = b.low != b.high;  // else a value would count twice
  const bool fast = b.margin > 0;
  const __m256 spare = _mm256_castsi256_ps(_mm256_add_epi32(
      _mm256_set1_epi32(b.n_bins), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  uint64_t at_low_count = 0, at_high_count = 0;
  const __m256 margin_lo = _mm256_set1_ps(static_cast<float>(b.margin));
  const __m256 margin_hi = _mm256_set1_ps(static_cast<float>(1 - b.margin));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 eq_low = _mm256_cmp_ps(v, low, _CMP_EQ_OQ);
    const __m256 eq_high =
        two ? _mm256_cmp_ps(v, high, _CMP_EQ_OQ) : _mm256_setzero_ps();
    const int at_low = _mm256_movemask_ps(eq_low);
    const int at_high = _mm256_movemask_ps(eq_high);
    at_low_count += __builtin_popcount(at_low);
    at_high_count += __builtin_popcount(at_high);
    if ((at_low | at_high) == 0xFF) continue;
    const __m256 known = _mm256_or_ps(eq_low, eq_high);
    const __m256 f = _mm256_mul_ps(_mm256_sub_ps(v, first), norm);
    __m256i idx = _mm256_cvttps_epi32(f);
    if (fast) {
      // int(f) is the bin where f's fraction is inside [margin, 1 - margin]
      // (SafeMargin) and int(f) < n_bins: no edge to compute. The batch's
      // min and max (ReLU zeros, ReLU6 sixes) are counted already.
      const __m256 frac = _mm256_sub_ps(f, _mm256_cvtepi32_ps(idx));
      const __m256 inside = _mm256_and_ps(
          _mm256_and_ps(_mm256_cmp_ps(frac, margin_lo, _CMP_GE_OQ),
                        _mm256_cmp_ps(frac, margin_hi, _CMP_LE_OQ)),
          _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, idx)));
      if (_mm256_movemask_ps(_mm256_or_ps(inside, known)) == 0xFF) {
        Increment(idx, known, spare, t);
        continue;
      }
    }
    idx = _mm256_add_epi32(idx, _mm256_cmpeq_epi32(idx, top));  // -1
    const __m256 lo = EdgesAt(idx, step, start);
    idx = _mm256_add_epi32(
        idx, _mm256_castps_si256(_mm256_cmp_ps(v, lo, _CMP_LT_OQ)));
    const __m256i next = _mm256_add_epi32(idx, one);
    const __m256 hi =
        _mm256_blendv_ps(EdgesAt(next, step, start), last_edge,
                         _mm256_castsi256_ps(_mm256_cmpeq_epi32(next, top)));
    const __m256i up = _mm256_andnot_si256(
        _mm256_cmpeq_epi32(idx, last),
        _mm256_castps_si256(_mm256_cmp_ps(v, hi, _CMP_GE_OQ)));
    idx = _mm256_sub_epi32(idx, up);  // +1
    Increment(idx, known, spare, t);
  }
  _mm256_zeroupper();  // see MinMaxAvx2
  t[low_bin] += static_cast<uint32_t>(at_low_count);
  t[high_bin] += static_cast<uint32_t>(at_high_count);
  CountScalar(x + i, n - i, b, t);
}

}  // namespace

absl::StatusOr<BatchHistogram> HistogramOfBatch(absl::Span<const float> values,
                                                int n_bins,
                                                absl::string_view name) {
  if (values.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' is empty: no histogram"));
  }
  const float* x = values.data();
  const int64_t n = static_cast<int64_t>(values.size());
  const MinMax m = kHaveAvx2 ? MinMaxAvx2(x, n)
                             : MinMaxScalar(x + 1, n - 1, {x[0], x[0], false});
  if (m.nan || std::isinf(m.min) || std::isinf(m.max)) {
    return CheckFinite(values, name);  // names the first bad element
  }
  // Sequential std::min/std::max keep the first of equal values, minmax_element
  // the last maximum: only zeros compare equal with other bits.
  BatchHistogram out;
  float first_min = m.min, first_max = m.max;
  out.min = m.min;
  out.max = m.max;
  if (m.min == 0 || m.max == 0) {
    int64_t first_zero = 0, last_zero = n - 1;
    while (x[first_zero] != 0) ++first_zero;
    while (x[last_zero] != 0) --last_zero;
    if (m.min == 0) first_min = out.min = x[first_zero];
    if (m.max == 0) {
      first_max = x[first_zero];
      out.max = x[last_zero];
    }
  }
  if (std::isinf(first_max - first_min)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': range [", first_min, ", ", first_max,
                     "] is wider than float32 allows; no histogram"));
  }
  // _get_outer_edges: np.float32 -/+ 0.5 is float64; linspace in float64,
  // cast to float32.
  double first = first_min, last = first_max;
  if (first == last) {
    first -= 0.5;
    last += 0.5;
  }
  out.first = first;
  out.last = last;
  const std::vector<float> edges = Float32Edges(first, last, n_bins);
  const float first32 = static_cast<float>(first);
  const float last32 = static_cast<float>(last);
  const double norm = n_bins / static_cast<double>(last32 - first32);
  const Binning binning{
      edges.data(),
      n_bins,
      first32,
      norm,
      norm > -3.4e38 && norm < 3.4e38,
      first_min,
      first_max,
      first,
      (last - first) / n_bins,
      SafeMargin(first, last, n_bins, norm, norm > -3.4e38 && norm < 3.4e38)};
  // Counts below 2^32: a tensor holds at most max_tensor_bytes (4 GiB).
  if (kHaveAvx2 && binning.f32) {
    out.counts.assign(n_bins + kSpareSlots, 0);
    CountAvx2(x, n, binning, out.counts.data());
    out.counts.resize(n_bins);
  } else {
    out.counts.assign(n_bins, 0);
    CountScalar(x, n, binning, out.counts.data());
  }
  return out;
}

std::vector<double> BatchHistogram::Edges() const {
  const std::vector<float> e =
      Float32Edges(first, last, static_cast<int>(counts.size()));
  return std::vector<double>(e.begin(), e.end());
}

quantizers::Histogram BatchHistogram::ToHistogram() const {
  quantizers::Histogram h;
  h.float32_edges = true;
  h.edges = Edges();
  h.counts.assign(counts.begin(), counts.end());
  return h;
}

}  // namespace quantd::stats
