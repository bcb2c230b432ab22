#include "server/pruning_service.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/pruning/prune_job.h"
#include "core/util/status_macros.h"
#include "server/job_limits.h"
#include "server/job_stream_reactor.h"
#include "server/result_chunks.h"

namespace quantd::server {
namespace {

// What Prune adds to the one job reactor (job_stream_reactor.h).
class PruneRpc : public JobRpcDefaults<v1::PruneEvent> {
 public:
  using Request = v1::PruneRequest;
  using Event = v1::PruneEvent;
  static constexpr char kMethod[] = "Prune";

  explicit PruneRpc(const Request* request) : request_(request) {}

  // Before the import (no model is parsed on the gRPC thread): the request
  // and its copies; the worker grows it once the model is imported.
  absl::StatusOr<int64_t> Check(ServiceContext& service, const std::string&) {
    RETURN_IF_ERROR(
        ValidatePruneRequest(*request_, JobLimitsFor(service.options)));
    return EstimatePruneMemoryBytesBeforeImport(*request_);
  }

  absl::StatusOr<std::vector<Event>> Run(const JobCall& call) {
    PruneContext c;
    c.registry = call.service->tpcs->registry();
    c.pool = call.service->compute_pool;
    c.cancel = call.cancel;
    c.progress = call.progress;
    c.limits = JobLimitsFor(call.service->options);
    const int threads = call.service->compute_pool->num_threads() + 1;
    c.on_import = [this, &call, threads](const Model& model) {
      return call.grow_reservation(
          EstimatePruneMemoryBytes(*request_, model, threads));
    };
    ASSIGN_OR_RETURN(v1::PruneResult result, RunPruneJob(*request_, c));
    return ResultEvents<Event>(std::move(result),
                               call.service->max_message_bytes());
  }

 private:
  const Request* const request_;
};

}  // namespace

grpc::ServerWriteReactor<v1::PruneEvent>* PruningServiceImpl::Prune(
    grpc::CallbackServerContext* ctx, const v1::PruneRequest* request) {
  return JobStreamReactor<PruneRpc>::Start(service_, ctx, request);
}

}  // namespace quantd::server
