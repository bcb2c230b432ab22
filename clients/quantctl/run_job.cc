#include "clients/quantctl/run_job.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/runtime/cpu_count.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "core/util/status_macros.h"

namespace quantd::quantctl {

absl::StatusOr<v1::QuantizeResult> RunJob(const JobFiles& job,
                                          const client::ChannelOptions& channel,
                                          absl::Duration deadline,
                                          ProgressBar* bar) {
  ASSIGN_OR_RETURN(v1::QuantizeRequest request, BuildQuantizeRequest(job));
  const absl::Time until = deadline == absl::InfiniteDuration()
                               ? absl::InfiniteFuture()
                               : absl::Now() + deadline;
  if (!channel.target.empty()) {
    ASSIGN_OR_RETURN(auto client, client::Client::Create(channel));
    return client->Quantize(
        std::move(request),
        [&](const v1::JobEvent& e) {
          if (e.has_progress()) {
            bar->Report({e.progress().stage(), e.progress().fraction(),
                         e.progress().message()});
          } else if (e.has_warning()) {
            bar->Warn(e.warning().message());
          }
        },
        {.deadline = until});
  }
  TpcRegistry registry;
  RETURN_IF_ERROR(registry.AddBuiltins());
  const int threads = job.threads > 0 ? job.threads : AvailableCpus();
  // The caller's thread works in ParallelFor too: N threads = N-1 workers.
  ThreadPool pool(threads - 1);
  CancellationToken cancel(until);
  JobContext context;
  context.registry = &registry;
  context.pool = &pool;
  context.cancel = &cancel;
  context.progress = bar;
  return RunQuantizeJob(request, context);
}

}  // namespace quantd::quantctl
