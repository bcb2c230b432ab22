// ParallelForSamples: the per-sample (or per-node) loop of the pipeline's
// stages. fn(i) runs for every i in [0, n) on a thread pool, the
// cancellation token is checked before each item, and progress is counted
// and reported in counting order. Each call owns index i, so callers that
// write into per-index slots and merge them in index order produce the same
// bytes whatever the thread count.
#ifndef QUANTD_CORE_PIPELINE_JOB_PARALLEL_SAMPLES_H_
#define QUANTD_CORE_PIPELINE_JOB_PARALLEL_SAMPLES_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

struct SampleProgress {
  ProgressSink* sink = nullptr;  // none: no reports
  std::string stage;             // Progress::stage, e.g. "calibrate"
  // Progress::message once `done` of `n` items have succeeded.
  std::function<std::string(int64_t done, int64_t n)> message;
  // Reports after every `every`-th succeeded item and after the n-th.
  int64_t every = 1;
};

// Runs fn(i) for i in [0, n): on `pool` when it has threads, else inline in
// index order. An item whose cancellation check fails is not run. Returns
// the first error in index order (not in completion order), else OK.
absl::Status ParallelForSamples(int64_t n, ThreadPool* pool,
                                const CancellationToken* cancel,
                                const SampleProgress& progress,
                                const std::function<absl::Status(int64_t)>& fn);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_PARALLEL_SAMPLES_H_
