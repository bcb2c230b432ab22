#include "core/pipeline/ptq/channel_ranges.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/pipeline/ptq/statistics.h"
#include "core/runtime/stage_names.h"
#include "core/stats/channel_collectors.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// One sample's per-channel min/max of the requested tensors; a tensor whose
// values the collector refuses (NaN, infinity) is `refused`.
struct SampleRanges {
  std::map<std::string, stats::MinMaxPerChannelCollector> collectors;
  std::set<std::string> refused;
};

}  // namespace

absl::StatusOr<std::map<std::string, std::vector<double>>> CollectChannelRanges(
    const Executor& executor, const std::vector<SampleFeeds>& samples,
    const std::map<std::string, int64_t>& tensors, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  const int64_t n = static_cast<int64_t>(samples.size());
  std::vector<SampleRanges> per_sample(n);
  SampleProgress report{
      progress, stage::kPrepare, [](int64_t d, int64_t total) {
        return absl::StrCat("channel ranges: ", d, "/", total, " samples");
      }};
  RETURN_IF_ERROR(ParallelForSamples(
      n, pool, cancel, report, [&](int64_t i) -> absl::Status {
        SampleRanges& ranges = per_sample[i];
        TensorObserver observer = [&](const Node& node, int k,
                                      const Tensor& value) {
          const std::string& name = node.outputs[k];
          auto it = tensors.find(name);
          if (it == tensors.end() || value.dtype() != DType::kFloat ||
              value.rank() < 2 || value.dim(1) != it->second) {
            return;
          }
          auto c = ranges.collectors.try_emplace(name, 1).first;
          if (!c->second.Update(value, name).ok()) ranges.refused.insert(name);
        };
        return RunObservedSample(executor, samples[i], i, observer, cancel)
            .status();
      }));
  // A tensor counts only if every sample saw it, finite, with the expected
  // shape.
  std::map<std::string, std::vector<double>> merged;
  for (const auto& [name, channels] : tensors) {
    std::vector<double> max(channels, 0.0);
    bool usable = n > 0;
    for (int64_t i = 0; i < n; ++i) {
      auto it = per_sample[i].collectors.find(name);
      usable = it != per_sample[i].collectors.end() &&
               !per_sample[i].refused.count(name);
      if (!usable) break;
      const auto& lo = it->second.min_per_channel();
      const auto& hi = it->second.max_per_channel();
      for (int64_t c = 0; c < channels; ++c) {
        max[c] = std::max({max[c], std::fabs(lo[c]), std::fabs(hi[c])});
      }
    }
    if (usable) merged[name] = std::move(max);
  }
  return merged;
}

}  // namespace quantd
