// Statistics in one executor pass over the calibration samples: for every
// tensor whose activation is quantized, the per-sample 2048-bin histogram and
// min/max; for the inputs of kernel nodes that get bias correction, the
// per-channel mean. Samples run in parallel on the pool; each sample's
// statistics are kept apart and merged in sample order (MCT's batch order),
// so the result does not depend on the thread count. On request it also keeps
// the float values of the first samples for the report (kept_float_values.h).
#ifndef QUANTD_CORE_PIPELINE_PTQ_STATISTICS_H_
#define QUANTD_CORE_PIPELINE_PTQ_STATISTICS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

struct StatisticsRequest {
  std::set<std::string> histogram_tensors;
  // tensor -> channel axis of its per-channel mean.
  std::map<std::string, int> mean_tensors;
  KeepFloatValuesRequest keep;
};

struct StatisticsResult {
  std::map<std::string, TensorStats> stats;
  std::map<std::string, std::vector<double>> means;
  // Shapes seen on the first sample (every produced tensor and input).
  std::map<std::string, std::vector<int64_t>> shapes;
  // Requested tensors that are not float (left unquantized by the caller).
  std::set<std::string> non_float;
  KeptFloatRuns kept;  // `keep.samples` entries (fewer if fewer samples)
};

// Runs calibration sample `i` with `observer` seeing every produced tensor;
// an error names the sample ("calibration sample 3: ...").
absl::StatusOr<std::map<std::string, Tensor>> RunObservedSample(
    const Executor& executor, const SampleFeeds& sample, int64_t i,
    const TensorObserver& observer, const CancellationToken* cancel);

absl::StatusOr<StatisticsResult> CollectStatistics(
    const Executor& executor, const std::vector<SampleFeeds>& samples,
    const StatisticsRequest& request, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PTQ_STATISTICS_H_
