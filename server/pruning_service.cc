#include "server/pruning_service.h"

#include <string>
#include <utility>

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

class PruneReactor final : public JobStreamReactor<v1::PruneEvent> {
 public:
  PruneReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
               const v1::PruneRequest* request)
      : JobStreamReactor(service, ctx, "Prune", request->request_id()),
        request_(request) {}

 private:
  // Before the import (no model is parsed on the gRPC thread): the request
  // and its copies; the worker grows it once the model is imported.
  absl::StatusOr<int64_t> Check(const std::string&) override {
    RETURN_IF_ERROR(
        ValidatePruneRequest(*request_, JobLimitsFor(service()->options)));
    return EstimatePruneMemoryBytesBeforeImport(*request_);
  }

  absl::Status Run(const std::string&) override {
    PruneContext c;
    c.registry = service()->tpcs->registry();
    c.pool = service()->compute_pool;
    c.cancel = &token();
    c.progress = this;
    c.limits = JobLimitsFor(service()->options);
    const int threads = service()->compute_pool->num_threads() + 1;
    c.on_import = [this, threads](const Model& model) {
      return GrowAdmission(EstimatePruneMemoryBytes(*request_, model, threads));
    };
    absl::StatusOr<v1::PruneResult> result = RunPruneJob(*request_, c);
    if (!result.ok()) return result.status();
    PostPruneResult(*std::move(result));
    return absl::OkStatus();
  }

  // One result event, or verified chunks when it exceeds the max send size
  // (as Quantize's results).
  void PostPruneResult(v1::PruneResult result) {
    const int64_t max_send = service()->max_message_bytes();
    if (static_cast<int64_t>(result.ByteSizeLong()) + kEventEnvelopeBytes <=
        max_send) {
      v1::PruneEvent e;
      *e.mutable_result() = std::move(result);
      PostResult(std::move(e));
      return;
    }
    const std::string serialized = result.SerializeAsString();
    result.Clear();
    for (v1::ResultChunk& chunk :
         SplitResult(serialized, ResultChunkBytes(max_send))) {
      v1::PruneEvent e;
      *e.mutable_result_chunk() = std::move(chunk);
      PostResult(std::move(e));
    }
  }

  const v1::PruneRequest* const request_;
};

}  // namespace

grpc::ServerWriteReactor<v1::PruneEvent>* PruningServiceImpl::Prune(
    grpc::CallbackServerContext* ctx, const v1::PruneRequest* request) {
  auto* reactor = new PruneReactor(service_, ctx, request);
  reactor->Start();
  return reactor;
}

}  // namespace quantd::server
