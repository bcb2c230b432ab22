// Per-channel ranges for data-driven channel equalization
// (prep/data_channel_equalization.h): one float pass over the calibration
// samples, before the statistics, observing only the requested tensors.
#ifndef QUANTD_CORE_PIPELINE_PTQ_CHANNEL_RANGES_H_
#define QUANTD_CORE_PIPELINE_PTQ_CHANNEL_RANGES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// For each tensor -> channel count, the largest |value| of each channel
// (axis 1) over every sample. A tensor that is not float, has another
// channel count, or holds a NaN or infinity in any sample is left out
// (calibration reports non-finite values itself). Samples run in parallel;
// the result does not depend on the thread count.
absl::StatusOr<std::map<std::string, std::vector<double>>> CollectChannelRanges(
    const Executor& executor, const std::vector<SampleFeeds>& samples,
    const std::map<std::string, int64_t>& tensors, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PTQ_CHANNEL_RANGES_H_
