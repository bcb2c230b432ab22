#include "core/pipeline/ptq/statistics.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/runtime/stage_names.h"
#include "core/stats/batch_histogram.h"
#include "core/stats/channel_collectors.h"
#include "core/stats/histogram_collector.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

struct SampleStats {
  absl::Status status;
  std::map<std::string, stats::BatchHistogram> histograms;
  std::map<std::string, std::vector<double>> means;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::set<std::string> non_float;
};

void Observe(const std::string& name, const Tensor& value,
             const StatisticsRequest& request, bool record_shapes,
             SampleStats* s) {
  if (!s->status.ok()) return;
  if (record_shapes) s->shapes[name] = value.shape();
  const bool hist = request.histogram_tensors.count(name) != 0;
  auto mean_it = request.mean_tensors.find(name);
  if (!hist && mean_it == request.mean_tensors.end()) return;
  if (value.dtype() != DType::kFloat) {
    s->non_float.insert(name);
    return;
  }
  if (value.num_elements() == 0) return;
  if (hist) {
    auto batch = stats::HistogramOfBatch(value.span<float>(),
                                         quantizers::kHistogramBins, name);
    if (!batch.ok()) {
      s->status = batch.status();
      return;
    }
    s->histograms[name] = *std::move(batch);
  }
  if (mean_it != request.mean_tensors.end()) {
    stats::MeanCollector mean(mean_it->second);
    absl::Status st = mean.Update(value, name);
    if (!st.ok()) {
      s->status = st;
      return;
    }
    s->means[name] = mean.mean();
  }
}

// One sample's kept values, charged to a budget shared by every sample. A
// sample that does not fit gives its bytes back and keeps nothing, and
// samples that start after it keep nothing either: each would hold up to
// the rest of the budget in references to its run's buffers (which the run
// then cannot reuse) only to give them back.
class SampleKeeper {
 public:
  SampleKeeper(const KeepFloatValuesRequest& request,
               std::atomic<int64_t>* used, std::atomic<bool>* closed,
               bool active)
      : request_(request),
        used_(used),
        closed_(closed),
        active_(active && !closed->load()) {}
  ~SampleKeeper() {
    if (charged_ > 0) used_->fetch_sub(charged_);
  }

  void Keep(const std::string& name, const Tensor& value) {
    if (!active_ || request_.tensors.count(name) == 0) return;
    if (!Charge(value)) return;
    // A reference to the executor's buffer, not a copy: Tensor copies on
    // the first mutable access, so nothing the run does later can change
    // it, and the buffer is released when the report has used it.
    values_.tensors[name] = value;
  }

  // The run's outputs; the kept values, or nullopt.
  std::optional<KeptFloatValues> Finish(std::map<std::string, Tensor> outputs) {
    if (!active_) return std::nullopt;
    for (const auto& [name, t] : outputs) {
      if (!Charge(t)) return std::nullopt;
    }
    values_.outputs = std::move(outputs);
    charged_ = 0;  // stays charged: the values live on in the result
    return std::move(values_);
  }

 private:
  bool Charge(const Tensor& value) {
    const int64_t bytes = static_cast<int64_t>(value.byte_size());
    if (used_->fetch_add(bytes) + bytes > request_.budget_bytes) {
      used_->fetch_sub(bytes + charged_);
      charged_ = 0;
      active_ = false;
      closed_->store(true);
      values_ = KeptFloatValues();
      return false;
    }
    charged_ += bytes;
    return true;
  }

  const KeepFloatValuesRequest& request_;
  std::atomic<int64_t>* used_;
  std::atomic<bool>* closed_;
  bool active_;
  int64_t charged_ = 0;
  KeptFloatValues values_;
};

}  // namespace

absl::StatusOr<std::map<std::string, Tensor>> RunObservedSample(
    const Executor& executor, const SampleFeeds& sample, int64_t i,
    const TensorObserver& observer, const CancellationToken* cancel) {
  RunOptions options;
  options.observer = &observer;
  options.cancel = cancel;
  auto out = executor.Run(sample, options);
  if (!out.ok()) {
    return absl::Status(
        out.status().code(),
        absl::StrCat("calibration sample ", i, ": ", out.status().message()));
  }
  return out;
}

absl::StatusOr<StatisticsResult> CollectStatistics(
    const Executor& executor, const std::vector<SampleFeeds>& samples,
    const StatisticsRequest& request, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  const int64_t n = static_cast<int64_t>(samples.size());
  std::vector<SampleStats> per_sample(n);
  std::vector<std::optional<KeptFloatValues>> kept(
      std::min<int64_t>(n, std::max<int64_t>(0, request.keep.samples)));
  std::atomic<int64_t> kept_bytes{0};
  std::atomic<bool> keeping_closed{false};
  SampleProgress report{progress, stage::kCalibrate,
                        [](int64_t d, int64_t total) {
                          return absl::StrCat(d, "/", total, " samples");
                        }};
  RETURN_IF_ERROR(ParallelForSamples(
      n, pool, cancel, report, [&](int64_t i) -> absl::Status {
        SampleStats& s = per_sample[i];
        const bool record_shapes = i == 0;
        for (const auto& [name, t] : samples[i]) {
          Observe(name, t, request, record_shapes, &s);
        }
        SampleKeeper keeper(request.keep, &kept_bytes, &keeping_closed,
                            i < static_cast<int64_t>(kept.size()));
        TensorObserver observer = [&](const Node& node, int k,
                                      const Tensor& value) {
          Observe(node.outputs[k], value, request, record_shapes, &s);
          keeper.Keep(node.outputs[k], value);
        };
        ASSIGN_OR_RETURN(auto out, RunObservedSample(executor, samples[i], i,
                                                     observer, cancel));
        if (i < static_cast<int64_t>(kept.size())) {
          kept[i] = keeper.Finish(std::move(out));
        }
        return s.status;
      }));
  // Merge in sample order: histograms merge as MCT merges batches, means
  // average with equal weight per sample.
  StatisticsResult result;
  result.kept.tensors = request.keep.tensors;
  result.kept.samples = std::move(kept);
  if (n > 0) result.shapes = std::move(per_sample[0].shapes);
  std::map<std::string, std::vector<stats::BatchHistogram>> batches;
  std::map<std::string, std::vector<double>> mean_sums;
  std::map<std::string, int> mean_counts;
  for (int64_t i = 0; i < n; ++i) {
    SampleStats& s = per_sample[i];
    for (auto& [name, h] : s.histograms) {
      const double lo = h.min, hi = h.max;
      batches[name].push_back(std::move(h));
      auto it = result.stats.find(name);
      if (it == result.stats.end()) {
        TensorStats& ts = result.stats[name];
        ts.min = lo;
        ts.max = hi;
      } else {
        it->second.min = std::min(it->second.min, lo);
        it->second.max = std::max(it->second.max, hi);
      }
    }
    for (auto& [name, m] : s.means) {
      auto& sum = mean_sums[name];
      if (sum.empty()) sum.assign(m.size(), 0.0);
      if (sum.size() != m.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", name, "' changes its channel count between samples"));
      }
      for (size_t c = 0; c < m.size(); ++c) sum[c] += m[c];
      mean_counts[name]++;
    }
    result.non_float.insert(s.non_float.begin(), s.non_float.end());
    s = SampleStats();  // free as we go
  }
  // Tensors merge independently: in parallel, each into its own slot.
  std::vector<
      std::pair<const std::string*, std::vector<stats::BatchHistogram>*>>
      lists;
  for (auto& [name, list] : batches) lists.emplace_back(&name, &list);
  std::vector<quantizers::Histogram> merged(lists.size());
  RETURN_IF_ERROR(ParallelForSamples(
      static_cast<int64_t>(lists.size()), pool, cancel, SampleProgress{},
      [&](int64_t t) -> absl::Status {
        auto m =
            stats::MergeBatches(*lists[t].second, quantizers::kHistogramBins);
        if (!m.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "tensor '", *lists[t].first, "': ", m.status().message()));
        }
        merged[t] = *std::move(m);
        lists[t].second->clear();  // free as we go
        return absl::OkStatus();
      }));
  for (size_t t = 0; t < lists.size(); ++t) {
    result.stats[*lists[t].first].histogram = std::move(merged[t]);
  }
  for (auto& [name, sum] : mean_sums) {
    for (double& v : sum) v /= mean_counts[name];
    result.means[name] = std::move(sum);
  }
  return result;
}

}  // namespace quantd
