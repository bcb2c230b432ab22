#include "core/stats/channel_collectors.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/stats/histogram_collector.h"

namespace quantd::stats {

absl::StatusOr<std::vector<int64_t>> ChannelLayout(const Tensor& tensor,
                                                   int axis,
                                                   absl::string_view name) {
  const int rank = tensor.rank();
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': channel axis ", axis,
                     " out of range for rank ", rank));
  }
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= tensor.dim(i);
  for (int i = a + 1; i < rank; ++i) inner *= tensor.dim(i);
  return std::vector<int64_t>{outer, tensor.dim(a), inner};
}

namespace {

absl::StatusOr<std::vector<float>> FiniteValues(const Tensor& tensor,
                                                absl::string_view name) {
  auto values = TensorValues(tensor, name);
  if (!values.ok()) return values.status();
  if (values->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' is empty: no statistics"));
  }
  absl::Status s = CheckFinite(*values, name);
  if (!s.ok()) return s;
  return values;
}

}  // namespace

absl::Status MinMaxCollector::Update(const Tensor& tensor,
                                     absl::string_view name) {
  auto values = FiniteValues(tensor, name);
  if (!values.ok()) return values.status();
  auto [mn, mx] = std::minmax_element(values->begin(), values->end());
  if (count_ == 0) {
    min_ = *mn;
    max_ = *mx;
  } else {
    min_ = std::min<double>(min_, *mn);
    max_ = std::max<double>(max_, *mx);
  }
  ++count_;
  return absl::OkStatus();
}

absl::Status MinMaxPerChannelCollector::Update(const Tensor& tensor,
                                               absl::string_view name) {
  auto layout = ChannelLayout(tensor, axis_, name);
  if (!layout.ok()) return layout.status();
  auto values = FiniteValues(tensor, name);
  if (!values.ok()) return values.status();
  const int64_t outer = (*layout)[0], channels = (*layout)[1],
                inner = (*layout)[2];
  if (!min_.empty() && static_cast<int64_t>(min_.size()) != channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': ", channels,
                     " channels, earlier batches had ", min_.size()));
  }
  if (min_.empty()) {
    min_.assign(channels, std::numeric_limits<double>::infinity());
    max_.assign(channels, -std::numeric_limits<double>::infinity());
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = values->data() + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        min_[c] = std::min<double>(min_[c], p[i]);
        max_[c] = std::max<double>(max_[c], p[i]);
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// sums[c] += sum over i of p_c[i] for `count` channels of `inner` values
// `inner` apart, each sum sequential in float64 (the reference order). The
// scalar loop takes one channel at a time; the AVX2 one eight, so that their
// add chains overlap.
void AddChannelSumsScalar(const float* p, int64_t count, int64_t inner,
                          double* sums) {
  for (int64_t c = 0; c < count; ++c) {
    double acc = 0;
    for (int64_t i = 0; i < inner; ++i) acc += p[c * inner + i];
    sums[c] += acc;
  }
}

// Adds, per lane k, the four columns of rows a, b, c, d (four values each,
// widened) in column order: lane k of `acc` sums row k sequentially.
__attribute__((target("avx2"))) inline __m256d AddColumns(__m256d acc,
                                                          __m256d a, __m256d b,
                                                          __m256d c,
                                                          __m256d d) {
  const __m256d ab_lo = _mm256_unpacklo_pd(a, b),
                ab_hi = _mm256_unpackhi_pd(a, b);
  const __m256d cd_lo = _mm256_unpacklo_pd(c, d),
                cd_hi = _mm256_unpackhi_pd(c, d);
  acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(ab_lo, cd_lo, 0x20));
  acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(ab_hi, cd_hi, 0x20));
  acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(ab_lo, cd_lo, 0x31));
  return _mm256_add_pd(acc, _mm256_permute2f128_pd(ab_hi, cd_hi, 0x31));
}

// Rows c .. c + 4 * kQuads - 1 of AddChannelSumsAvx2: each group of four
// rows is one add chain (four dependent adds a step), so more groups overlap
// more chains.
template <int kQuads>
__attribute__((target("avx2"))) inline void AddRowGroups(const float* p,
                                                         int64_t c,
                                                         int64_t inner,
                                                         double* sums) {
  constexpr int kRows = 4 * kQuads;
  const float* r[kRows];
  for (int k = 0; k < kRows; ++k) r[k] = p + (c + k) * inner;
  __m256d acc[kQuads];
  for (int q = 0; q < kQuads; ++q) acc[q] = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= inner; i += 4) {
    for (int q = 0; q < kQuads; ++q) {
      __m256d w[4];
      for (int k = 0; k < 4; ++k)
        w[k] = _mm256_cvtps_pd(_mm_loadu_ps(r[4 * q + k] + i));
      acc[q] = AddColumns(acc[q], w[0], w[1], w[2], w[3]);
    }
  }
  alignas(32) double out[kRows];
  for (int q = 0; q < kQuads; ++q) _mm256_store_pd(out + 4 * q, acc[q]);
  for (; i < inner; ++i) {
    for (int k = 0; k < kRows; ++k) out[k] += r[k][i];
  }
  for (int k = 0; k < kRows; ++k) sums[c + k] += out[k];
}

// Sixteen rows at a time (then eight), four values of each per step,
// transposed so that each lane adds its own row's values in order (5-9x the
// scalar loop at eight rows; gathers were slower). Sixteen rows keep four add
// chains in flight instead of two.
__attribute__((target("avx2"))) void AddChannelSumsAvx2(const float* p,
                                                        int64_t count,
                                                        int64_t inner,
                                                        double* sums) {
  int64_t c = 0;
  for (; c + 16 <= count; c += 16) AddRowGroups<4>(p, c, inner, sums);
  for (; c + 8 <= count; c += 8) AddRowGroups<2>(p, c, inner, sums);
  // Clean upper halves before non-VEX code (batch_histogram.cc, MinMaxAvx2).
  _mm256_zeroupper();
  AddChannelSumsScalar(p + c * inner, count - c, inner, sums + c);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

void AddChannelSums(const float* p, int64_t count, int64_t inner,
                    double* sums) {
  if (kHaveAvx2) {
    AddChannelSumsAvx2(p, count, inner, sums);
  } else {
    AddChannelSumsScalar(p, count, inner, sums);
  }
}

}  // namespace

absl::Status MeanCollector::Update(const Tensor& tensor,
                                   absl::string_view name) {
  auto layout = ChannelLayout(tensor, axis_, name);
  if (!layout.ok()) return layout.status();
  std::vector<float> copy;
  absl::Span<const float> values;
  if (tensor.dtype() == DType::kFloat) {
    values = tensor.span<float>();
  } else {
    auto cast = TensorValues(tensor, name);
    if (!cast.ok()) return cast.status();
    copy = *std::move(cast);
    values = copy;
  }
  if (values.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' is empty: no statistics"));
  }
  const int64_t outer = (*layout)[0], channels = (*layout)[1],
                inner = (*layout)[2];
  std::vector<double> sums(channels, 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    AddChannelSums(values.data() + o * channels * inner, channels, inner,
                   sums.data());
  }
  // Float32 values summed in float64 cannot overflow: a non-finite sum
  // means a NaN or Inf value.
  for (double sum : sums) {
    if (!std::isfinite(sum)) return CheckFinite(values, name);
  }
  if (!sum_of_means_.empty() &&
      static_cast<int64_t>(sum_of_means_.size()) != channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': ", channels,
                     " channels, earlier batches had ", sum_of_means_.size()));
  }
  if (sum_of_means_.empty()) sum_of_means_.assign(channels, 0.0);
  const double per_channel = static_cast<double>(outer * inner);
  for (int64_t c = 0; c < channels; ++c)
    sum_of_means_[c] += sums[c] / per_channel;
  ++batches_;
  return absl::OkStatus();
}

std::vector<double> MeanCollector::mean() const {
  std::vector<double> out(sum_of_means_.size());
  for (size_t c = 0; c < out.size(); ++c) out[c] = sum_of_means_[c] / batches_;
  return out;
}

}  // namespace quantd::stats
