// Per-tensor min/max and per-channel statistics (MCT's MinMaxCollector,
// MinMaxPerChannelCollector and MeanCollector), fed one batch at a time.
//
// The channel axis is the output-channel axis of the tensor (negative values
// count from the end, -1 = last). MeanCollector keeps, like MCT, the mean of
// the per-batch channel means (every batch weighs the same).
#ifndef QUANTD_CORE_STATS_CHANNEL_COLLECTORS_H_
#define QUANTD_CORE_STATS_CHANNEL_COLLECTORS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/tensor.h"

namespace quantd::stats {

class MinMaxCollector {
 public:
  absl::Status Update(const Tensor& tensor, absl::string_view name);
  bool empty() const { return count_ == 0; }
  double min() const { return min_; }
  double max() const { return max_; }

 private:
  int64_t count_ = 0;
  double min_ = 0, max_ = 0;
};

class MinMaxPerChannelCollector {
 public:
  explicit MinMaxPerChannelCollector(int axis) : axis_(axis) {}
  absl::Status Update(const Tensor& tensor, absl::string_view name);
  const std::vector<double>& min_per_channel() const { return min_; }
  const std::vector<double>& max_per_channel() const { return max_; }

 private:
  int axis_;
  std::vector<double> min_, max_;
};

class MeanCollector {
 public:
  explicit MeanCollector(int axis) : axis_(axis) {}
  absl::Status Update(const Tensor& tensor, absl::string_view name);
  // Mean per channel; empty before the first batch.
  std::vector<double> mean() const;
  int num_batches() const { return batches_; }

 private:
  int axis_;
  int batches_ = 0;
  std::vector<double> sum_of_means_;
};

// Resolves `axis` for `tensor` and returns [outer, channels, inner] sizes.
absl::StatusOr<std::vector<int64_t>> ChannelLayout(const Tensor& tensor,
                                                   int axis,
                                                   absl::string_view name);

}  // namespace quantd::stats

#endif  // QUANTD_CORE_STATS_CHANNEL_COLLECTORS_H_
