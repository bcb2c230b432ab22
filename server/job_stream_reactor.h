// The one reactor behind every one-job server-streaming RPC
// (QuantizationService.Quantize, PruningService.Prune,
// DataGenerationService.GenerateData; docs/service.md, job streams).
//
// On the gRPC thread: authentication, the drain check, the RPC's cheap
// checks and memory estimate, admission; then the job goes to the server's
// job pool. While it is queued or runs the stream carries a heartbeat every
// --heartbeat_seconds, its progress paced to one event per kProgressInterval
// (ProgressPacer) and its warnings; its result events (ResultEvents chunks a
// large result) go out with the stream's end. Events are written through an
// EventCoalescer (one write in flight, latest progress wins). Every call is
// in the per-method grpc_server_* metrics, every admitted job in
// quantd_jobs_total and the stage histogram, and the JSON log has a line when
// a job is rejected (with the reason), accepted and finished (code, seconds,
// last stage, and how long a cancelled job took to stop). OnCancel (client
// cancel, deadline, shutdown) or a failed write fires the job's
// CancellationToken, whose deadline is the call's; a job cancelled while
// queued ends at once. gRPC (until OnDone) and the job's worker share the
// reactor, the tickers hold weak references: it deletes itself once both
// are done.
//
// An RPC supplies a class `Rpc` deriving from JobRpcDefaults<Event>:
//   using Request = v1::...Request;  // has request_id
//   using Event = v1::...Event;      // has progress, warning, heartbeat
//   static constexpr char kMethod[] = "Prune";  // in metrics and logs
//   explicit Rpc(const Request* request);  // or Request*, see Start
//   // gRPC thread: cheap checks (no model parsed); the admission estimate.
//   absl::StatusOr<int64_t> Check(ServiceContext& service,
//                                 const std::string& principal);
//   // A job worker: the job; its result events, the last one at the end.
//   absl::StatusOr<std::vector<Event>> Run(const JobCall& call);
// and may override what JobRpcDefaults says.
#ifndef QUANTD_SERVER_JOB_STREAM_REACTOR_H_
#define QUANTD_SERVER_JOB_STREAM_REACTOR_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/util/request_checks.h"
#include "server/admission.h"
#include "server/client_metadata.h"
#include "server/event_coalescer.h"
#include "server/heap_trim.h"
#include "server/json_log.h"
#include "server/metrics.h"
#include "server/progress_pacer.h"
#include "server/service_context.h"
#include "server/status_util.h"

namespace quantd::server {

// What an RPC's Run gets from its reactor.
struct JobCall {
  ServiceContext* service = nullptr;
  // Who the client is (ServiceContext::Authenticate): which uploads it sees.
  std::string principal;
  const CancellationToken* cancel = nullptr;
  // The job's progress and warnings, with --fault_injection's
  // stall:STAGE@N in front.
  ProgressSink* progress = nullptr;
  // --fault_injection's stage faults, for a job that calls a hook as each
  // stage starts (JobContext.on_stage_start); null without faults.
  std::function<absl::Status(const std::string&)> on_stage_start;
  // Raises the job's admitted memory to `total_bytes` (an estimate from the
  // parsed model); never lowers it. An error stops the job.
  std::function<absl::Status(int64_t total_bytes)> grow_reservation;
  // The same for a part of the job reached while it runs: waits for other
  // jobs to release memory (AdmissionTicket::GrowWaiting).
  std::function<absl::Status(int64_t total_bytes)> grow_reservation_waiting;
};

// What an RPC may leave to the reactor.
template <typename Event>
struct JobRpcDefaults {
  // The job's last stage: its first report goes out at once instead of
  // being paced (ProgressPacer::SendAtOnce); "" for none.
  static constexpr const char* kLastStage = "";
  // Fills the event that tells the client the job was admitted and adds
  // the RPC's fields to the "job accepted" log line; false: no such event.
  bool Accepted(int /*queue_position*/, Event* /*event*/,
                LogFields* /*fields*/) {
    return false;
  }
  // Stamps the job's ids on every event the reactor sends.
  static void Stamp(const std::string& /*job_id*/,
                    const std::string& /*request_id*/, Event* /*event*/) {}
};

template <typename Rpc>
class JobStreamReactor final
    : public grpc::ServerWriteReactor<typename Rpc::Event>,
      public ProgressSink,
      private EventCoalescer<typename Rpc::Event>::Sink,
      public std::enable_shared_from_this<JobStreamReactor<Rpc>> {
 public:
  using Event = typename Rpc::Event;
  using Request = typename Rpc::Request;

  // The RPC handler's body: checks and admits the call, then schedules its
  // job or finishes the call with the reason. `request` is what Rpc's
  // constructor takes: `const Request*`, or `Request*` when the RPC frees
  // parts of it (OwnedRequestStreamingHandler).
  template <typename RequestPtr>
  static grpc::ServerWriteReactor<Event>* Start(
      ServiceContext* service, grpc::CallbackServerContext* ctx,
      RequestPtr request) {
    std::shared_ptr<JobStreamReactor> reactor(
        new JobStreamReactor(service, ctx, request));
    reactor->self_ = reactor;  // gRPC's reference, dropped in OnDone
    reactor->Begin();
    return reactor.get();
  }

  // ProgressSink, called from the job's threads.
  void Report(const Progress& progress) override {
    Event event = NewEvent();
    v1::JobProgress* p = event.mutable_progress();
    p->set_stage(progress.stage);
    p->set_fraction(progress.fraction);
    p->set_message(progress.message);
    p->set_elapsed_seconds(Seconds(absl::Now() - started_));
    EnterStage(progress.stage, progress.fraction);
    pacer_->Report(std::move(event), progress.stage);
  }
  void Warn(absl::string_view message) override {
    pacer_->Flush();  // what the warning follows
    Event event = NewEvent();
    event.mutable_warning()->set_message(std::string(message));
    events_.Post(std::move(event), /*droppable=*/false);
  }

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override {
    // A write fails only on a broken stream: the client is gone even if
    // OnCancel has not arrived (yet). A queued job must not wait for it.
    if (!ok) Cancel(CancelReason());
    events_.OnWriteDone(ok);
  }
  // Deadline or client cancel / disconnect / server shutdown.
  void OnCancel() override { Cancel(CancelReason()); }
  void OnDone() override {
    service_->metrics->RpcHandled(RpcType::kServerStream, Rpc::kMethod,
                                  final_code_.load(),
                                  Seconds(absl::Now() - started_));
    // The last statement: the reactor may go with gRPC's reference.
    std::shared_ptr<JobStreamReactor> last = std::move(self_);
  }

 private:
  template <typename RequestPtr>
  JobStreamReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
                   RequestPtr request)
      : rpc_(request),
        service_(service),
        ctx_(ctx),
        request_id_(request->request_id()),
        peer_(ctx->peer()),
        job_id_(NewJobId()) {}

  void Begin() {
    service_->metrics->RpcStarted(RpcType::kServerStream, Rpc::kMethod);
    service_->metrics->RpcMsgReceived(RpcType::kServerStream, Rpc::kMethod);
    if (!request_id_.empty()) {
      // Before any check, so even a rejected call is answered with its id.
      ctx_->AddInitialMetadata("x-request-id",
                               MetadataSafe(request_id_, kMaxRequestIdChars));
    }
    ctx_->AddInitialMetadata("x-job-id", job_id_);
    // Who the client is decides which uploads its references can see.
    absl::StatusOr<std::string> principal = service_->Authenticate(*ctx_);
    absl::Status status = principal.status();
    if (status.ok() && service_->draining.load()) status = DrainingError();
    int64_t estimate = 0;
    if (status.ok()) {
      absl::StatusOr<int64_t> checked = rpc_.Check(*service_, *principal);
      status = checked.status();
      if (checked.ok()) estimate = *checked;
    }
    std::unique_ptr<AdmissionTicket> ticket;
    if (status.ok()) {
      auto admitted = service_->admission->TryAdmit(estimate);
      status = admitted.status();
      if (admitted.ok()) ticket = *std::move(admitted);
    }
    if (!status.ok()) {
      LogFields fields = Fields();
      fields.emplace_back("error", std::string(status.message()));
      fields.emplace_back("code", absl::StatusCodeToString(status.code()));
      Log(LogLevel::kInfo, "job rejected", fields);
      End(std::move(status));
      return;
    }
    principal_ = *std::move(principal);
    if (ctx_->deadline() != std::chrono::system_clock::time_point::max()) {
      SetDeadline(absl::FromChrono(ctx_->deadline()));
    }
    LogFields fields = Fields();
    fields.emplace_back("memory_bytes", absl::StrCat(estimate));
    fields.emplace_back("queue_position",
                        absl::StrCat(ticket->queue_position()));
    Admit(std::move(ticket), &fields);
    std::weak_ptr<JobStreamReactor> weak = this->weak_from_this();
    const int64_t heartbeat_id = service_->heartbeats->Register([weak] {
      if (auto reactor = weak.lock()) reactor->Heartbeat();
    });
    {
      absl::MutexLock lock(&mu_);
      heartbeat_id_ = heartbeat_id;
    }
    service_->job_pool->Schedule(
        [reactor = this->shared_from_this()] { reactor->RunOnWorker(); });
    // Logged once the job is on its way, so the log line (a write to
    // stdout) does not delay the job's start. Only a job that had ended
    // already (it takes milliseconds) could log `job finished` first.
    Log(LogLevel::kInfo, "job accepted", fields);
  }

  // The job holds `ticket` from here; the accepted event (if the RPC has
  // one) goes out and the progress pacing starts.
  void Admit(std::unique_ptr<AdmissionTicket> ticket, LogFields* fields) {
    Event accepted = NewEvent();
    const bool send_accepted =
        rpc_.Accepted(ticket->queue_position(), &accepted, fields);
    {
      absl::MutexLock lock(&mu_);
      ticket_ = std::move(ticket);
      stage_ = "queued";
      stage_started_ = started_;
    }
    std::weak_ptr<JobStreamReactor> weak = this->weak_from_this();
    pacer_.emplace(
        kProgressInterval, service_->progress_flusher,
        [weak] {
          if (auto reactor = weak.lock()) reactor->pacer_->Flush();
        },
        [this](Event e, bool droppable) {
          events_.Post(std::move(e), droppable);
        });
    if (Rpc::kLastStage[0] != '\0') pacer_->SendAtOnce(Rpc::kLastStage);
    if (send_accepted) {
      events_.Post(std::move(accepted), /*droppable=*/false);
      pacer_->Sent();
    }
  }

  void RunOnWorker() {
    if (!TryStart()) return;
    JobCall call;
    call.service = service_;
    call.principal = principal_;
    call.cancel = &token_;
    // --fault_injection=stall:STAGE@N stalls inside a stage (tests only).
    const std::unique_ptr<ProgressSink> faulty =
        service_->faults.WrapProgress(this, &token_);
    call.progress = faulty != nullptr ? faulty.get() : this;
    call.on_stage_start = service_->faults.HookFor(&token_);
    call.grow_reservation = [this](int64_t total_bytes) {
      return GrowReservation(total_bytes, /*wait=*/false);
    };
    call.grow_reservation_waiting = [this](int64_t total_bytes) {
      return GrowReservation(total_bytes, /*wait=*/true);
    };
    absl::StatusOr<std::vector<Event>> result;
    try {
      result = rpc_.Run(call);
    } catch (const std::bad_alloc&) {
      result = absl::ResourceExhaustedError("job ran out of memory");
    } catch (const std::exception& e) {
      result = absl::InternalError(absl::StrCat("job failed: ", e.what()));
    }
    if (result.ok()) {
      End(absl::OkStatus(), *std::move(result), /*job_ran=*/true);
    } else {
      End(result.status(), {}, /*job_ran=*/true);
    }
  }

  // False if the job was abandoned while queued: it must not run, the
  // request's call may be gone.
  bool TryStart() {
    absl::MutexLock lock(&mu_);
    if (ended_) return false;
    started_running_ = true;
    ticket_->MarkRunning();
    return true;
  }

  // Raises the ticket to `total_bytes`, waiting for room (GrowWaiting) or
  // not. Called on the worker while the job runs, when the ticket stays
  // (End takes it only after the job or while it is queued): no lock held
  // while waiting.
  absl::Status GrowReservation(int64_t total_bytes, bool wait) {
    AdmissionTicket* ticket = nullptr;
    {
      absl::MutexLock lock(&mu_);
      ticket = ticket_.get();
    }
    if (ticket == nullptr || total_bytes <= ticket->memory_bytes()) {
      return absl::OkStatus();
    }
    const int64_t more = total_bytes - ticket->memory_bytes();
    if (!wait) return ticket->Grow(more);
    // The client hears why the job stands still (the progress pacing sends
    // it at the next tick unless the job moves on first).
    const auto tell = [this](absl::string_view reason) {
      Progress waiting = CurrentProgress();
      waiting.message = absl::StrCat("waiting for memory: ", reason);
      Report(waiting);
    };
    const absl::Time start = absl::Now();
    const absl::Status status = ticket->GrowWaiting(more, &token_, tell);
    const double waited = Seconds(absl::Now() - start);
    if (waited >= 1) {
      LogFields fields = Fields();
      fields.emplace_back("more_bytes", absl::StrCat(more));
      fields.emplace_back("waited_seconds", absl::StrCat(waited));
      Log(LogLevel::kInfo, "job waited for memory", fields);
    }
    return status;
  }

  // The call's deadline, which the token enforces.
  void SetDeadline(absl::Time deadline) {
    token_.SetDeadline(deadline);
    absl::MutexLock lock(&mu_);
    deadline_ = deadline;
  }

  void Heartbeat() {
    Event event = NewEvent();
    event.mutable_heartbeat()->set_elapsed_seconds(
        Seconds(absl::Now() - started_));
    events_.Post(std::move(event), /*droppable=*/true);
  }

  // Ends the job and the stream with `status`, after the `results` events;
  // later calls do nothing. `job_ran`: on the worker, after the job.
  void End(absl::Status status, std::vector<Event> results = {},
           bool job_ran = false) {
    std::unique_ptr<AdmissionTicket> ticket;
    int64_t heartbeat_id = -1;
    bool admitted = false;
    std::string stage;
    absl::Time cancelled_at = absl::InfiniteFuture();
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      ended_ = true;
      admitted = ticket_ != nullptr;
      ticket = std::move(ticket_);
      heartbeat_id = heartbeat_id_;
      stage = stage_;
      if (!stage_.empty()) {
        service_->metrics->ObserveStage(stage_,
                                        Seconds(absl::Now() - stage_started_));
      }
      cancelled_at = std::min(cancelled_at_, deadline_);
    }
    // The progress pacing held back goes out before the end, so the client
    // knows the stage the job ended in (unless results follow and the
    // client knows the stage already). Its write starts first: the results
    // can only follow once gRPC has called OnWriteDone (on another thread),
    // and the bookkeeping below overlaps that wait.
    std::optional<Event> held;
    if (pacer_.has_value()) {
      held = pacer_->Close(
          /*drop_known_stage=*/status.ok() && !results.empty());
    }
    if (held.has_value()) events_.Post(*std::move(held), false);
    if (heartbeat_id >= 0) service_->heartbeats->Unregister(heartbeat_id);
    // Free the worker slot and memory budget, and give the heap's free
    // memory back, before the client learns the outcome: its next request
    // is admitted, and the server's memory is what it was before the job.
    const int64_t reserved_bytes = admitted ? ticket->memory_bytes() : 0;
    ticket.reset();
    if (job_ran) TrimHeapAfterJob(reserved_bytes);
    if (admitted) LogFinished(status, stage, cancelled_at, reserved_bytes);
    if (results.empty()) {
      events_.Close(std::move(status));
      return;
    }
    for (Event& e : results) Rpc::Stamp(job_id_, request_id_, &e);
    Event last = std::move(results.back());
    results.pop_back();
    for (Event& e : results) events_.Post(std::move(e), /*droppable=*/false);
    results.clear();
    // The last event goes out with the stream's end.
    events_.PostLastAndClose(std::move(last), std::move(status));
  }

  void LogFinished(const absl::Status& status, const std::string& stage,
                   absl::Time cancelled_at, int64_t reserved_bytes) {
    service_->metrics->JobFinished(status.code());
    LogFields fields = Fields();
    fields.emplace_back("status", absl::StatusCodeToString(status.code()));
    fields.emplace_back("seconds",
                        absl::StrCat(Seconds(absl::Now() - started_)));
    // Where the job was, and for a cancelled job how long it took from the
    // cancel (or the deadline) to here, where the worker and the
    // reservation are free (docs/reliability.md, cancellation latency).
    fields.emplace_back("stage", stage);
    // The most the job reserved: admitted, grown as it reached its stages.
    fields.emplace_back("reserved_bytes", absl::StrCat(reserved_bytes));
    const bool cancelled = status.code() == absl::StatusCode::kCancelled ||
                           status.code() == absl::StatusCode::kDeadlineExceeded;
    if (cancelled && cancelled_at < absl::InfiniteFuture()) {
      fields.emplace_back(
          "cancel_seconds",
          absl::StrCat(std::max(0.0, Seconds(absl::Now() - cancelled_at))));
    }
    if (!status.ok())
      fields.emplace_back("error", std::string(status.message()));
    Log(status.ok() ? LogLevel::kInfo : LogLevel::kWarning, "job finished",
        fields);
  }

  // Fires the token; a job still in the queue ends at once so its place is
  // freed without waiting for a worker. Called once or twice (OnCancel, a
  // failed write): the first one counts.
  void Cancel(absl::Status reason) {
    {
      // Before the token fires: the job may end (and log) at once.
      absl::MutexLock lock(&mu_);
      if (cancelled_at_ == absl::InfiniteFuture()) cancelled_at_ = absl::Now();
    }
    token_.Cancel(reason);
    bool queued = false;
    {
      absl::MutexLock lock(&mu_);
      // Rejected or already done (nothing runs), or already cancelling.
      if (ended_ || cancelling_) return;
      cancelling_ = true;
      queued = !started_running_;
    }
    LogFields fields = Fields();
    fields.emplace_back("reason", std::string(reason.message()));
    Log(LogLevel::kInfo,
        queued ? "job cancelled while queued" : "job cancelling", fields);
    if (queued) End(std::move(reason));
  }

  // Why the call ended early: the deadline or a cancel / disconnect.
  absl::Status CancelReason() const {
    // A client whose deadline expires resets the stream itself, which can
    // reach us a little before our copy of the deadline (set when the call
    // arrived) passes: a cancel within kDeadlineSlack of the deadline is the
    // deadline.
    constexpr auto kDeadlineSlack = std::chrono::seconds(1);
    const bool deadline_passed =
        ctx_->deadline() != std::chrono::system_clock::time_point::max() &&
        ctx_->deadline() <= std::chrono::system_clock::now() + kDeadlineSlack;
    return deadline_passed
               ? absl::DeadlineExceededError("deadline exceeded")
               : absl::CancelledError(
                     "call cancelled by the client or by server shutdown");
  }

  // Stage bookkeeping: the time of the stage that ends goes to the metrics.
  void EnterStage(const std::string& stage, double fraction) {
    absl::MutexLock lock(&mu_);
    fraction_ = fraction;
    if (stage == stage_) return;
    const absl::Time now = absl::Now();
    if (!stage_.empty()) {
      service_->metrics->ObserveStage(stage_, Seconds(now - stage_started_));
    }
    stage_ = stage;
    stage_started_ = now;
  }

  // The stage and fraction of the job's last progress report.
  Progress CurrentProgress() {
    absl::MutexLock lock(&mu_);
    Progress progress;
    progress.stage = stage_;
    progress.fraction = fraction_;
    return progress;
  }

  Event NewEvent() const {
    Event event;
    Rpc::Stamp(job_id_, request_id_, &event);
    return event;
  }

  // What every log line of the call carries.
  LogFields Fields() const {
    return {{"rpc", Rpc::kMethod},
            {"job_id", job_id_},
            {"request_id", request_id_.substr(0, kMaxRequestIdChars)},
            {"peer", peer_}};
  }

  static std::string NewJobId() {
    thread_local absl::BitGen gen;
    return absl::StrFormat("%016x", absl::Uniform<uint64_t>(gen));
  }
  static double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

  // EventCoalescer::Sink
  void StartWrite(const Event* event) override {
    service_->metrics->RpcMsgSent(RpcType::kServerStream, Rpc::kMethod);
    grpc::ServerWriteReactor<Event>::StartWrite(event);
  }
  void Finish(const absl::Status& status) override {
    const grpc::Status grpc_status = ToGrpcStatus(status, Fields());
    final_code_ = static_cast<int>(grpc_status.error_code());
    grpc::ServerWriteReactor<Event>::Finish(grpc_status);
  }
  void WriteAndFinish(const Event* event, const absl::Status& status) override {
    service_->metrics->RpcMsgSent(RpcType::kServerStream, Rpc::kMethod);
    const grpc::Status grpc_status = ToGrpcStatus(status, Fields());
    final_code_ = static_cast<int>(grpc_status.error_code());
    grpc::ServerWriteReactor<Event>::StartWriteAndFinish(
        event, grpc::WriteOptions(), grpc_status);
  }

  Rpc rpc_;
  ServiceContext* const service_;
  grpc::CallbackServerContext* const ctx_;
  const std::string request_id_;
  const std::string peer_;
  const std::string job_id_;
  const absl::Time started_ = absl::Now();
  std::string principal_;  // set before the job is scheduled
  // gRPC's reference, from Start to OnDone.
  std::shared_ptr<JobStreamReactor> self_;
  // The call's final code (grpc::StatusCode), for the RPC metrics.
  std::atomic<int> final_code_{0};
  CancellationToken token_;
  EventCoalescer<Event> events_{this};
  // Set by Admit, before the job runs.
  std::optional<ProgressPacer<Event>> pacer_;

  absl::Mutex mu_;
  std::unique_ptr<AdmissionTicket> ticket_ ABSL_GUARDED_BY(mu_);
  int64_t heartbeat_id_ ABSL_GUARDED_BY(mu_) = -1;
  bool started_running_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time cancelled_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::string stage_ ABSL_GUARDED_BY(mu_);
  double fraction_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time stage_started_ ABSL_GUARDED_BY(mu_);
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_JOB_STREAM_REACTOR_H_
