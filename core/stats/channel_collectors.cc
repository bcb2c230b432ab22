#include "core/stats/channel_collectors.h"

#include <algorithm>
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

absl::Status MeanCollector::Update(const Tensor& tensor,
                                   absl::string_view name) {
  auto layout = ChannelLayout(tensor, axis_, name);
  if (!layout.ok()) return layout.status();
  auto values = FiniteValues(tensor, name);
  if (!values.ok()) return values.status();
  const int64_t outer = (*layout)[0], channels = (*layout)[1],
                inner = (*layout)[2];
  if (!sum_of_means_.empty() &&
      static_cast<int64_t>(sum_of_means_.size()) != channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': ", channels,
                     " channels, earlier batches had ", sum_of_means_.size()));
  }
  if (sum_of_means_.empty()) sum_of_means_.assign(channels, 0.0);
  std::vector<double> sums(channels, 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = values->data() + (o * channels + c) * inner;
      double s = 0;
      for (int64_t i = 0; i < inner; ++i) s += p[i];
      sums[c] += s;
    }
  }
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
