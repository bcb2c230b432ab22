#include "core/pipeline/ptq/channel_ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/pipeline/ptq/statistics.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

constexpr double kNotFinite = std::numeric_limits<double>::quiet_NaN();

// Per-channel max |v| of an [N, C, ...] float tensor into `max`; a NaN
// entry marks a non-finite channel.
void ChannelAbsMax(const Tensor& t, std::vector<double>* max) {
  const int64_t n = t.dim(0), c = t.dim(1);
  const int64_t inner = c == 0 || n == 0 ? 0 : t.num_elements() / (n * c);
  const float* d = t.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* row = d + (b * c + ch) * inner;
      float m = 0;
      bool finite = true;
      for (int64_t k = 0; k < inner; ++k) {
        const float a = std::fabs(row[k]);
        finite &= std::isfinite(a);
        m = std::max(m, a);
      }
      double& out = (*max)[ch];
      out = !finite || std::isnan(out) ? kNotFinite : std::max(out, double{m});
    }
  }
}

}  // namespace

absl::StatusOr<std::map<std::string, std::vector<double>>> CollectChannelRanges(
    const Executor& executor, const std::vector<SampleFeeds>& samples,
    const std::map<std::string, int64_t>& tensors, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  using Ranges = std::map<std::string, std::vector<double>>;
  const int64_t n = static_cast<int64_t>(samples.size());
  std::vector<Ranges> per_sample(n);
  SampleProgress report{progress, "prepare", [](int64_t d, int64_t total) {
                          return absl::StrCat("channel ranges: ", d, "/", total,
                                              " samples");
                        }};
  RETURN_IF_ERROR(ParallelForSamples(
      n, pool, cancel, report, [&](int64_t i) -> absl::Status {
        Ranges& ranges = per_sample[i];
        TensorObserver observer = [&](const Node& node, int k,
                                      const Tensor& value) {
          auto it = tensors.find(node.outputs[k]);
          if (it == tensors.end() || value.dtype() != DType::kFloat ||
              value.rank() < 2 || value.dim(1) != it->second) {
            return;
          }
          auto [slot, fresh] = ranges.try_emplace(
              it->first, std::vector<double>(it->second, 0.0));
          ChannelAbsMax(value, &slot->second);
        };
        return RunObservedSample(executor, samples[i], i, observer, cancel)
            .status();
      }));
  // A tensor counts only if every sample saw it with the expected shape.
  Ranges merged;
  for (const auto& [name, channels] : tensors) {
    std::vector<double> max(channels, 0.0);
    bool usable = n > 0;
    for (int64_t i = 0; i < n && usable; ++i) {
      auto it = per_sample[i].find(name);
      usable = it != per_sample[i].end();
      for (int64_t c = 0; usable && c < channels; ++c) {
        usable = !std::isnan(it->second[c]);
        max[c] = std::max(max[c], it->second[c]);
      }
    }
    if (usable) merged[name] = std::move(max);
  }
  return merged;
}

}  // namespace quantd
