#include "server/pruning_service.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/pruning/prune_job.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "server/status_util.h"

namespace quantd::server {
namespace {

JobLimits PruneLimits(const ServerOptions& o) {
  JobLimits limits;
  limits.max_model_bytes = o.max_model_mb << 20;
  limits.max_nodes = o.max_nodes;
  limits.max_tensor_elements = o.max_tensor_elements;
  limits.max_samples = o.max_samples;
  limits.max_sample_bytes = o.max_sample_mb << 20;
  return limits;
}

// The job's memory for admission: the request, the model imported twice
// (unpruned and pruned) and the two executors' activations, bounded by a
// fixed overhead; pruning is a light job next to quantization.
int64_t PruneMemoryEstimate(const v1::PruneRequest& request) {
  return 3 * static_cast<int64_t>(request.ByteSizeLong()) + (int64_t{64} << 20);
}

// Writes one event at a time; progress events coalesce (only the latest
// waits); the result and the status come last. Deletes itself once gRPC is
// done with the call and the job has returned.
class PruneReactor final : public grpc::ServerWriteReactor<v1::PruneEvent>,
                           public ProgressSink {
 public:
  PruneReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
               const v1::PruneRequest* request)
      : service_(service), request_(request) {
    absl::Status st = service->Authorize(*ctx);
    if (st.ok() && service->draining.load()) {
      st = absl::UnavailableError("server is draining; retry elsewhere");
    }
    if (st.ok())
      st = ValidatePruneRequest(*request, PruneLimits(service->options));
    if (st.ok()) {
      auto ticket = service->admission->TryAdmit(PruneMemoryEstimate(*request));
      if (ticket.ok()) {
        ticket_ = *std::move(ticket);
      } else {
        st = ticket.status();
      }
    }
    if (!st.ok()) {
      absl::MutexLock lock(&mu_);
      job_running_ = false;
      job_done_ = true;
      status_ = ToGrpcStatus(st, {{"rpc", "Prune"}, {"peer", ctx->peer()}});
      WriteNextLocked();
      return;
    }
    service->job_pool->Schedule([this] { RunJob(); });
  }

  void Report(const Progress& p) override {
    v1::PruneEvent e;
    v1::JobProgress* progress = e.mutable_progress();
    progress->set_stage(p.stage);
    progress->set_fraction(p.fraction);
    progress->set_message(p.message);
    absl::MutexLock lock(&mu_);
    if (!queue_.empty() && queue_.back().has_progress()) queue_.pop_back();
    queue_.push_back(std::move(e));
    WriteNextLocked();
  }

  void Warn(absl::string_view message) override {
    v1::PruneEvent e;
    e.mutable_warning()->set_message(std::string(message));
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(e));
    WriteNextLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      cancel_.Cancel(absl::CancelledError("client went away"));
      queue_.clear();
    }
    WriteNextLocked();
  }

  void OnCancel() override { cancel_.Cancel(); }

  void OnDone() override {
    bool last;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      last = !job_running_;
    }
    if (last) delete this;
  }

 private:
  void RunJob() {
    ticket_->MarkRunning();
    PruneContext c;
    c.registry = service_->tpcs->registry();
    c.pool = service_->compute_pool;
    c.cancel = &cancel_;
    c.progress = this;
    c.limits = PruneLimits(service_->options);
    absl::StatusOr<v1::PruneResult> result = RunPruneJob(*request_, c);
    ticket_.reset();
    bool last;
    {
      absl::MutexLock lock(&mu_);
      if (result.ok()) {
        v1::PruneEvent e;
        *e.mutable_result() = *std::move(result);
        queue_.push_back(std::move(e));
      } else {
        status_ = ToGrpcStatus(result.status(), {{"rpc", "Prune"}});
      }
      job_done_ = true;
      job_running_ = false;
      WriteNextLocked();
      last = done_;
    }
    if (last) delete this;
  }

  // Starts the next write, or finishes the call once the job is done and
  // everything is written.
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (!queue_.empty()) {
      current_ = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      StartWrite(&current_);
      return;
    }
    if (job_done_) {
      finished_ = true;
      Finish(status_);
    }
  }

  ServiceContext* const service_;
  const v1::PruneRequest* const request_;
  std::unique_ptr<AdmissionTicket> ticket_;
  CancellationToken cancel_;
  absl::Mutex mu_;
  std::deque<v1::PruneEvent> queue_ ABSL_GUARDED_BY(mu_);
  v1::PruneEvent current_;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool job_done_ ABSL_GUARDED_BY(mu_) = false;
  bool job_running_ ABSL_GUARDED_BY(mu_) = true;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerWriteReactor<v1::PruneEvent>* PruningServiceImpl::Prune(
    grpc::CallbackServerContext* ctx, const v1::PruneRequest* request) {
  return new PruneReactor(service_, ctx, request);
}

}  // namespace quantd::server
