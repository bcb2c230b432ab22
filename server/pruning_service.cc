#include "server/pruning_service.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/pruning/prune_job.h"
#include "core/util/status_macros.h"
#include "server/job_limits.h"
#include "server/job_stream_reactor.h"

namespace quantd::server {
namespace {

// The job's memory for admission: the request, the model imported twice
// (unpruned and pruned) and the two executors' activations, bounded by a
// fixed overhead; pruning is a light job next to quantization.
int64_t PruneMemoryEstimate(const v1::PruneRequest& request) {
  return 3 * static_cast<int64_t>(request.ByteSizeLong()) + (int64_t{64} << 20);
}

class PruneReactor final : public JobStreamReactor<v1::PruneEvent> {
 public:
  PruneReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
               const v1::PruneRequest* request)
      : JobStreamReactor(service, ctx, "Prune"), request_(request) {}

 private:
  absl::StatusOr<int64_t> Check(const std::string&) override {
    RETURN_IF_ERROR(
        ValidatePruneRequest(*request_, JobLimitsFor(service()->options)));
    return PruneMemoryEstimate(*request_);
  }

  absl::Status Run(const std::string&) override {
    PruneContext c;
    c.registry = service()->tpcs->registry();
    c.pool = service()->compute_pool;
    c.cancel = &token();
    c.progress = this;
    c.limits = JobLimitsFor(service()->options);
    absl::StatusOr<v1::PruneResult> result = RunPruneJob(*request_, c);
    if (!result.ok()) return result.status();
    v1::PruneEvent e;
    *e.mutable_result() = *std::move(result);
    PostResult(std::move(e));
    return absl::OkStatus();
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
