// The reactor behind a one-job server-streaming RPC whose events carry
// `progress` and `warning` (PruningService.Prune,
// DataGenerationService.GenerateData).
//
// Start() runs on the gRPC thread: authentication, the drain check, the
// subclass's cheap Check() and admission with its estimate; then Run() goes
// to the server's job pool. Like Quantize, every call is in the per-method
// grpc_server_* metrics, every job in quantd_jobs_total, and the JSON log
// has a line when a job is rejected (with the reason), accepted and
// finished (code, seconds, last stage). Events are written through an
// EventCoalescer (one write in flight; progress within a stage coalesces, the
// first progress of a stage, warnings and results are kept). OnCancel (client
// cancel, deadline, shutdown) or a failed write fires the job's token; the
// call's deadline is also the token's. The reactor deletes itself once gRPC
// is done with the call and Run() has returned.
#ifndef QUANTD_SERVER_JOB_STREAM_REACTOR_H_
#define QUANTD_SERVER_JOB_STREAM_REACTOR_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/util/request_checks.h"
#include "server/event_coalescer.h"
#include "server/heap_trim.h"
#include "server/json_log.h"
#include "server/metrics.h"
#include "server/service_context.h"
#include "server/status_util.h"

namespace quantd::server {

template <typename Event>
class JobStreamReactor : public grpc::ServerWriteReactor<Event>,
                         public ProgressSink,
                         private EventCoalescer<Event>::Sink {
 public:
  // Checks and admits the call, then schedules the job or finishes the call
  // with the error. Call once, right after construction.
  void Start() {
    service_->metrics->RpcStarted(RpcType::kServerStream, rpc_);
    service_->metrics->RpcMsgReceived(RpcType::kServerStream, rpc_);
    absl::StatusOr<std::string> principal = service_->Authenticate(*ctx_);
    absl::Status st = principal.status();
    if (st.ok() && service_->draining.load()) {
      st = absl::UnavailableError("server is draining; retry elsewhere");
    }
    absl::StatusOr<int64_t> estimate =
        st.ok() ? Check(*principal) : absl::StatusOr<int64_t>(st);
    if (estimate.ok()) {
      auto ticket = service_->admission->TryAdmit(*estimate);
      if (ticket.ok()) {
        ticket_ = *std::move(ticket);
      } else {
        estimate = ticket.status();
      }
    }
    if (!estimate.ok()) {
      LogFields fields = Fields();
      fields.emplace_back("error", std::string(estimate.status().message()));
      fields.emplace_back("code",
                          absl::StatusCodeToString(estimate.status().code()));
      Log(LogLevel::kInfo, "job rejected", fields);
      {
        absl::MutexLock lock(&mu_);
        job_running_ = false;
      }
      events_.Close(estimate.status());
      return;
    }
    if (ctx_->deadline() != std::chrono::system_clock::time_point::max()) {
      cancel_.SetDeadline(absl::FromChrono(ctx_->deadline()));
    }
    LogFields fields = Fields();
    fields.emplace_back("memory_bytes", absl::StrCat(*estimate));
    accepted_at_ = absl::Now();
    service_->job_pool->Schedule(
        [this, who = *std::move(principal)] { RunOnWorker(who); });
    // After scheduling: the log line (a write to stdout) does not delay the
    // job's start.
    Log(LogLevel::kInfo, "job accepted", fields);
  }

  // ProgressSink: the job's progress and warnings become events.
  void Report(const Progress& p) override {
    Event e;
    e.mutable_progress()->set_stage(p.stage);
    e.mutable_progress()->set_fraction(p.fraction);
    e.mutable_progress()->set_message(p.message);
    bool new_stage;
    {
      absl::MutexLock lock(&mu_);
      new_stage = p.stage != stage_;
      stage_ = p.stage;
    }
    events_.Post(std::move(e), /*droppable=*/!new_stage);
  }
  void Warn(absl::string_view message) override {
    Event e;
    e.mutable_warning()->set_message(std::string(message));
    events_.Post(std::move(e), /*droppable=*/false);
  }

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override {
    if (!ok) cancel_.Cancel(absl::CancelledError("client went away"));
    events_.OnWriteDone(ok);
  }
  void OnCancel() override { cancel_.Cancel(); }
  void OnDone() override {
    service_->metrics->RpcHandled(
        RpcType::kServerStream, rpc_, final_code_.load(),
        absl::ToDoubleSeconds(absl::Now() - started_));
    bool last;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      last = !job_running_;
    }
    if (last) delete this;
  }

 protected:
  // `rpc` is the method's name as metrics and logs show it ("Prune").
  JobStreamReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
                   std::string rpc, std::string request_id)
      : service_(service),
        ctx_(ctx),
        rpc_(std::move(rpc)),
        peer_(ctx->peer()),
        request_id_(std::move(request_id).substr(0, kMaxRequestIdChars)),
        job_id_(NewJobId()) {}
  ~JobStreamReactor() override = default;

  // On the gRPC thread: the request's cheap checks (no parsing of the
  // model); the job's memory estimate for admission.
  virtual absl::StatusOr<int64_t> Check(const std::string& principal) = 0;
  // On a job worker: the job; result events go out through PostResult.
  virtual absl::Status Run(const std::string& principal) = 0;

  void PostResult(Event e) { events_.Post(std::move(e), /*droppable=*/false); }
  // Raises the admitted memory to `total_bytes` once the job knows better.
  absl::Status GrowAdmission(int64_t total_bytes) {
    const int64_t more = total_bytes - ticket_->memory_bytes();
    return more > 0 ? ticket_->Grow(more) : absl::OkStatus();
  }
  ServiceContext* service() const { return service_; }
  const CancellationToken& token() const { return cancel_; }

 private:
  void RunOnWorker(const std::string& principal) {
    ticket_->MarkRunning();
    absl::Status st;
    try {
      st = Run(principal);
    } catch (const std::bad_alloc&) {
      st = absl::ResourceExhaustedError("job ran out of memory");
    } catch (const std::exception& e) {
      st = absl::InternalError(absl::StrCat("job failed: ", e.what()));
    }
    const int64_t reserved = ticket_->memory_bytes();
    ticket_.reset();
    TrimHeapAfterJob(reserved);
    service_->metrics->JobFinished(st.code());
    LogFields fields = Fields();
    fields.emplace_back("status", absl::StatusCodeToString(st.code()));
    fields.emplace_back(
        "seconds",
        absl::StrCat(absl::ToDoubleSeconds(absl::Now() - accepted_at_)));
    {
      absl::MutexLock lock(&mu_);
      fields.emplace_back("stage", stage_);
    }
    if (!st.ok()) fields.emplace_back("error", std::string(st.message()));
    Log(st.ok() ? LogLevel::kInfo : LogLevel::kWarning, "job finished", fields);
    events_.Close(st);
    bool last;
    {
      absl::MutexLock lock(&mu_);
      job_running_ = false;
      last = done_;
    }
    if (last) delete this;
  }

  static std::string NewJobId() {
    thread_local absl::BitGen gen;
    return absl::StrFormat("%016x", absl::Uniform<uint64_t>(gen));
  }

  // What every log line of the call carries.
  LogFields Fields() const {
    return {{"rpc", rpc_},
            {"job_id", job_id_},
            {"request_id", request_id_},
            {"peer", peer_}};
  }

  // EventCoalescer::Sink
  void StartWrite(const Event* e) override {
    service_->metrics->RpcMsgSent(RpcType::kServerStream, rpc_);
    grpc::ServerWriteReactor<Event>::StartWrite(e);
  }
  void Finish(const absl::Status& status) override {
    const grpc::Status grpc_status = ToGrpcStatus(status, Fields());
    final_code_ = static_cast<int>(grpc_status.error_code());
    grpc::ServerWriteReactor<Event>::Finish(grpc_status);
  }
  void WriteAndFinish(const Event* e, const absl::Status& status) override {
    service_->metrics->RpcMsgSent(RpcType::kServerStream, rpc_);
    const grpc::Status grpc_status = ToGrpcStatus(status, Fields());
    final_code_ = static_cast<int>(grpc_status.error_code());
    grpc::ServerWriteReactor<Event>::StartWriteAndFinish(
        e, grpc::WriteOptions(), grpc_status);
  }

  ServiceContext* const service_;
  grpc::CallbackServerContext* const ctx_;
  const std::string rpc_, peer_, request_id_, job_id_;
  const absl::Time started_ = absl::Now();
  absl::Time accepted_at_;  // set before the job is scheduled
  // The call's final code (grpc::StatusCode), for the RPC metrics.
  std::atomic<int> final_code_{0};
  std::unique_ptr<AdmissionTicket> ticket_;
  CancellationToken cancel_;
  EventCoalescer<Event> events_{this};
  absl::Mutex mu_;
  std::string stage_ ABSL_GUARDED_BY(mu_);
  bool job_running_ ABSL_GUARDED_BY(mu_) = true;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_JOB_STREAM_REACTOR_H_
