#include "core/pipeline/job/parallel_samples.h"

#include <mutex>
#include <vector>

namespace quantd {

absl::Status ParallelForSamples(
    int64_t n, ThreadPool* pool, const CancellationToken* cancel,
    const SampleProgress& progress,
    const std::function<absl::Status(int64_t)>& fn) {
  std::vector<absl::Status> status(n);
  int64_t done = 0;  // guarded by progress_mu
  // std::mutex: Debian's Abseil is not TSan-instrumented.
  std::mutex progress_mu;
  auto run_one = [&](int64_t i) {
    if (cancel != nullptr && !(status[i] = cancel->Check()).ok()) return;
    status[i] = fn(i);
    if (!status[i].ok() || progress.sink == nullptr) return;
    // Counted under the lock so that reports leave in counting order.
    std::lock_guard<std::mutex> lock(progress_mu);
    const int64_t d = ++done;
    if (d % progress.every == 0 || d == n) {
      progress.sink->Report({progress.stage, static_cast<double>(d) / n,
                             progress.message ? progress.message(d, n) : ""});
    }
  };
  if (pool != nullptr && pool->num_threads() > 0) {
    pool->ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) run_one(i);
    });
  } else {
    for (int64_t i = 0; i < n; ++i) run_one(i);
  }
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace quantd
