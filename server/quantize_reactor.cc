#include "server/quantize_reactor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/stage_names.h"
#include "core/util/request_checks.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"
#include "quantd/v1/quantization_service.pb.h"
#include "server/client_metadata.h"
#include "server/heap_trim.h"
#include "server/json_log.h"
#include "server/progress_pacer.h"
#include "server/result_chunks.h"
#include "server/status_util.h"

namespace quantd::server {
namespace {

constexpr char kMethod[] = "Quantize";

std::string NewJobId() {
  thread_local absl::BitGen gen;
  return absl::StrFormat("%016x", absl::Uniform<uint64_t>(gen));
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

bool IsCancellation(const absl::Status& status) {
  return status.code() == absl::StatusCode::kCancelled ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace

// Everything about one job that must outlive the reactor: the worker, the
// heartbeat ticker and the reactor all hold it.
class JobState final : public ProgressSink,
                       public std::enable_shared_from_this<JobState> {
 public:
  JobState(ServiceContext* service, EventCoalescer<v1::JobEvent>::Sink* sink,
           std::string request_id, std::string peer)
      : service_(service),
        coalescer_(sink),
        job_id_(NewJobId()),
        request_id_(std::move(request_id)),
        peer_(std::move(peer)),
        accepted_at_(absl::Now()) {}

  const std::string& job_id() const { return job_id_; }
  CancellationToken& token() { return token_; }
  EventCoalescer<v1::JobEvent>& coalescer() { return coalescer_; }

  LogFields Fields() const {
    return {{"job_id", job_id_}, {"request_id", request_id_}, {"peer", peer_}};
  }

  // `tpc` is what the job runs with (JobContext.sources): resolved once.
  void Admitted(std::unique_ptr<AdmissionTicket> ticket, ResolvedTpc tpc) {
    v1::JobEvent event = NewEvent();
    event.mutable_accepted()->set_queue_position(ticket->queue_position());
    event.mutable_accepted()->set_tpc(tpc.ref);
    tpc_ = std::move(tpc);
    {
      absl::MutexLock lock(&mu_);
      ticket_ = std::move(ticket);
      stage_ = "queued";
      stage_started_ = accepted_at_;
    }
    std::weak_ptr<JobState> weak = weak_from_this();
    pacer_.emplace(
        kProgressInterval, service_->progress_flusher,
        [weak] {
          if (auto job = weak.lock()) job->pacer_->Flush();
        },
        [this](v1::JobEvent e, bool droppable) {
          coalescer_.Post(std::move(e), droppable);
        });
    // The pipeline's last stage (but an MCTQ export after it).
    pacer_->SendAtOnce(stage::kReport);
    coalescer_.Post(std::move(event), /*droppable=*/false);
    pacer_->Sent();
  }

  // Set by Admitted before the job is scheduled; read by its worker.
  const ResolvedTpc& tpc() const { return tpc_; }

  // Raises the job's memory reservation to `total_bytes` (the estimate from
  // the parsed model); never lowers it.
  absl::Status GrowReservation(int64_t total_bytes) {
    absl::MutexLock lock(&mu_);
    if (ticket_ == nullptr || total_bytes <= ticket_->memory_bytes()) {
      return absl::OkStatus();
    }
    return ticket_->Grow(total_bytes - ticket_->memory_bytes());
  }

  // The call's deadline, which the token enforces.
  void SetDeadline(absl::Time deadline) {
    token_.SetDeadline(deadline);
    absl::MutexLock lock(&mu_);
    deadline_ = deadline;
  }

  // What the job had reserved when it ended (0 before).
  int64_t reserved_bytes() {
    absl::MutexLock lock(&mu_);
    return reserved_bytes_;
  }

  void SetHeartbeatId(int64_t id) {
    absl::MutexLock lock(&mu_);
    heartbeat_id_ = id;
  }

  // False if the job was abandoned while queued: the worker must not touch
  // the request, whose call may be gone.
  bool TryStart() {
    absl::MutexLock lock(&mu_);
    if (ended_) return false;
    started_ = true;
    ticket_->MarkRunning();
    return true;
  }

  // ProgressSink, called from the job's threads.
  void Report(const Progress& progress) override {
    v1::JobEvent event = NewEvent();
    v1::JobProgress* p = event.mutable_progress();
    p->set_stage(progress.stage);
    p->set_fraction(progress.fraction);
    p->set_message(progress.message);
    p->set_elapsed_seconds(Seconds(absl::Now() - accepted_at_));
    EnterStage(progress.stage);
    // At most one progress event per kProgressInterval (progress_pacer.h).
    pacer_->Report(std::move(event), progress.stage);
  }

  void Warn(absl::string_view message) override {
    pacer_->Flush();  // what the warning follows
    v1::JobEvent event = NewEvent();
    event.mutable_warning()->set_message(std::string(message));
    coalescer_.Post(std::move(event), /*droppable=*/false);
  }

  void Heartbeat() {
    v1::JobEvent event = NewEvent();
    event.mutable_heartbeat()->set_elapsed_seconds(
        Seconds(absl::Now() - accepted_at_));
    coalescer_.Post(std::move(event), /*droppable=*/true);
  }

  // The job produced a result: post it (chunked if needed) and finish OK.
  void Succeed(v1::QuantizeResult result) {
    const int64_t max_send = service_->max_message_bytes();
    const int64_t size = static_cast<int64_t>(result.ByteSizeLong());
    // The last event goes out with the stream's end.
    v1::JobEvent last = NewEvent();
    if (size + kEventEnvelopeBytes <= max_send) {
      *last.mutable_result() = std::move(result);
    } else {
      const std::string serialized = result.SerializeAsString();
      std::vector<v1::ResultChunk> chunks =
          SplitResult(serialized, ResultChunkBytes(max_send));
      *last.mutable_result_chunk() = std::move(chunks.back());
      chunks.pop_back();
      for (v1::ResultChunk& chunk : chunks) {
        v1::JobEvent event = NewEvent();
        *event.mutable_result_chunk() = std::move(chunk);
        coalescer_.Post(std::move(event), /*droppable=*/false);
      }
    }
    End(absl::OkStatus(), std::move(last));
  }

  // Ends the job and the stream with `status`, after `last` if given; later
  // calls do nothing.
  void End(absl::Status status, std::optional<v1::JobEvent> last = {}) {
    std::unique_ptr<AdmissionTicket> ticket;
    int64_t heartbeat_id = -1;
    bool admitted = false;
    std::string stage;
    absl::Time cancelled_at = absl::InfiniteFuture();
    std::optional<v1::JobEvent> held;
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      ended_ = true;
      admitted = ticket_ != nullptr;
      if (admitted) reserved_bytes_ = ticket_->memory_bytes();
      ticket = std::move(ticket_);
      heartbeat_id = heartbeat_id_;
      stage = stage_;
      if (!stage_.empty()) {
        service_->metrics->ObserveStage(stage_,
                                        Seconds(absl::Now() - stage_started_));
      }
      cancelled_at = std::min(cancelled_at_, deadline_);
    }
    // The progress pacing held back goes out before the end, so the
    // client knows the stage the job ended in (unless a result follows and
    // the client knows the stage already). Its write starts first: the
    // last event can only follow once gRPC has called OnWriteDone (on
    // another thread), and the bookkeeping below overlaps that wait.
    if (pacer_.has_value()) {
      held =
          pacer_->Close(/*drop_known_stage=*/status.ok() && last.has_value());
    }
    if (held.has_value()) coalescer_.Post(*std::move(held), false);
    if (heartbeat_id >= 0) service_->heartbeats->Unregister(heartbeat_id);
    // Free the worker slot and memory budget before the client learns the
    // outcome, so that its next request is admitted.
    ticket.reset();
    if (admitted) {
      service_->metrics->JobFinished(status.code());
      LogFields fields = Fields();
      fields.emplace_back("status", absl::StatusCodeToString(status.code()));
      fields.emplace_back("seconds",
                          absl::StrCat(Seconds(absl::Now() - accepted_at_)));
      // Where the job was, and for a cancelled job how long it took from
      // the cancel (or the deadline) to here, where the worker and the
      // reservation are free (docs/reliability.md, cancellation latency).
      fields.emplace_back("stage", stage);
      if (IsCancellation(status) && cancelled_at < absl::InfiniteFuture()) {
        fields.emplace_back(
            "cancel_seconds",
            absl::StrCat(std::max(0.0, Seconds(absl::Now() - cancelled_at))));
      }
      if (!status.ok())
        fields.emplace_back("error", std::string(status.message()));
      Log(status.ok() ? LogLevel::kInfo : LogLevel::kWarning, "job finished",
          fields);
    }
    if (last.has_value()) {
      coalescer_.PostLastAndClose(*std::move(last), std::move(status));
    } else {
      coalescer_.Close(std::move(status));
    }
  }

  // OnCancel: fire the token; a job still in the queue ends at once so its
  // place is freed without waiting for a worker.
  // Called once or twice (OnCancel, a failed write): the first one counts.
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
      queued = !started_;
    }
    Log(LogLevel::kInfo,
        queued ? "job cancelled while queued" : "job cancelling", [&] {
          LogFields f = Fields();
          f.emplace_back("reason", std::string(reason.message()));
          return f;
        }());
    if (queued) End(std::move(reason));
  }

 private:
  v1::JobEvent NewEvent() const {
    v1::JobEvent event;
    event.set_job_id(job_id_);
    event.set_request_id(request_id_);
    return event;
  }

  // Stage bookkeeping: the time of the stage that ends goes to the metrics.
  void EnterStage(const std::string& stage) {
    absl::MutexLock lock(&mu_);
    if (stage == stage_) return;
    const absl::Time now = absl::Now();
    if (!stage_.empty()) {
      service_->metrics->ObserveStage(stage_, Seconds(now - stage_started_));
    }
    stage_ = stage;
    stage_started_ = now;
  }

  ServiceContext* const service_;
  EventCoalescer<v1::JobEvent> coalescer_;
  CancellationToken token_;
  const std::string job_id_;
  const std::string request_id_;
  const std::string peer_;
  const absl::Time accepted_at_;
  ResolvedTpc tpc_;

  absl::Mutex mu_;
  std::unique_ptr<AdmissionTicket> ticket_ ABSL_GUARDED_BY(mu_);
  int64_t heartbeat_id_ ABSL_GUARDED_BY(mu_) = -1;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time cancelled_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::string stage_ ABSL_GUARDED_BY(mu_);
  absl::Time stage_started_ ABSL_GUARDED_BY(mu_);
  // Set by Admitted, before the job runs.
  std::optional<ProgressPacer<v1::JobEvent>> pacer_;
};

namespace {

// Checks that belong to the service rather than the pipeline: which of the
// alternative fields are set, and that referenced uploads exist.
absl::Status CheckRequestShape(const v1::QuantizeRequest& request,
                               const ServerOptions& options,
                               UploadStore& uploads,
                               const std::string& principal,
                               int64_t* ref_bytes) {
  const bool has_model = !request.onnx_model().empty();
  const bool has_model_ref = !request.model_ref().empty();
  if (has_model && has_model_ref) {
    return absl::InvalidArgumentError(
        "onnx_model and model_ref are both set; send exactly one");
  }
  if (!has_model && !has_model_ref) {
    return absl::InvalidArgumentError(
        "onnx_model: empty; send the model bytes or upload them and set "
        "model_ref");
  }
  const int64_t max_model_bytes = options.max_model_mb << 20;
  if (static_cast<int64_t>(request.onnx_model().size()) > max_model_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("onnx_model: ", request.onnx_model().size(),
                     " bytes exceeds the limit of ", max_model_bytes,
                     " bytes (--max_model_mb)"));
  }
  if (request.calibration_samples_size() > options.max_samples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "calibration_samples: ", request.calibration_samples_size(),
        " samples exceed the limit of ", options.max_samples,
        " (--max_samples)"));
  }
  if (!request.samples_ref().empty() &&
      request.calibration_samples_size() > 0) {
    return absl::InvalidArgumentError(
        "calibration_samples and samples_ref are both set; send exactly one");
  }
  *ref_bytes = 0;
  const struct {
    const char* field;
    const std::string& ref;
    v1::UploadKind kind;
  } refs[] = {{"model_ref", request.model_ref(), v1::UPLOAD_KIND_MODEL},
              {"samples_ref", request.samples_ref(), v1::UPLOAD_KIND_SAMPLES}};
  for (const auto& r : refs) {
    if (r.ref.empty()) continue;
    if (!IsSha256Hex(r.ref)) {
      return absl::InvalidArgumentError(
          absl::StrCat(r.field, ": \"", r.ref.substr(0, 80),
                       "\" is not a sha256 (64 lowercase hex digits)"));
    }
    auto entry = uploads.Get(r.ref, principal);
    if (!entry.ok()) {
      return absl::NotFoundError(
          absl::StrCat(r.field, ": ", entry.status().message()));
    }
    if (!entry->has_kind(r.kind)) {
      return absl::InvalidArgumentError(absl::StrCat(
          r.field, ": upload ", r.ref, " is a ",
          v1::UploadKind_Name(static_cast<v1::UploadKind>(entry->first_kind())),
          ", expected ", v1::UploadKind_Name(r.kind)));
    }
    *ref_bytes += static_cast<int64_t>(entry->data->size());
  }
  return absl::OkStatus();
}

// What the request's model_ref / samples_ref point to, held for the job's
// duration; the job reads them in place (JobContext.sources).
struct ResolvedUploads {
  std::shared_ptr<const std::string> model;
  std::optional<v1::SampleSet> samples;
};

absl::StatusOr<ResolvedUploads> ResolveUploads(
    const v1::QuantizeRequest& request, UploadStore& uploads,
    const std::string& principal) {
  ResolvedUploads out;
  if (!request.model_ref().empty()) {
    auto entry = uploads.Get(request.model_ref(), principal);
    if (!entry.ok()) {
      return absl::NotFoundError(
          absl::StrCat("model_ref: ", entry.status().message()));
    }
    out.model = entry->data;
  }
  if (!request.samples_ref().empty()) {
    auto entry = uploads.Get(request.samples_ref(), principal);
    if (!entry.ok()) {
      return absl::NotFoundError(
          absl::StrCat("samples_ref: ", entry.status().message()));
    }
    out.samples.emplace();
    if (!out.samples->ParseFromString(*entry->data)) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples_ref: upload ", request.samples_ref(),
                       " is not a serialized quantd.v1.SampleSet"));
    }
  }
  return out;
}

// Once the job has parsed the model and decoded the calibration samples,
// the request's bytes of them (most of a request: MobileNetV2's 64 samples
// are 37 MiB) are freed instead of living until the call ends. Evaluation
// samples stay: the job asks whether any were sent. gRPC's callback API
// passes the request as const, but it is a message allocated for this call
// alone, which the library does not read after handing it over; the job
// reads only its options from here on.
void ReleaseDecodedPayload(const v1::QuantizeRequest* request) {
  auto* owned = const_cast<v1::QuantizeRequest*>(request);
  google::protobuf::RepeatedPtrField<v1::Sample>().Swap(
      owned->mutable_calibration_samples());
  std::string().swap(*owned->mutable_onnx_model());
}

JobLimits LimitsFor(const ServiceContext& service) {
  JobLimits limits;
  limits.max_model_bytes = service.options.max_model_mb << 20;
  limits.max_nodes = service.options.max_nodes;
  limits.max_tensor_elements = service.options.max_tensor_elements;
  limits.max_samples = service.options.max_samples;
  limits.max_sample_bytes = service.options.max_sample_mb << 20;
  return limits;
}

void RunJobOnWorker(ServiceContext* service, JobState* job,
                    const v1::QuantizeRequest* request,
                    const std::string& principal) {
  absl::StatusOr<v1::QuantizeResult> result;
  try {
    absl::StatusOr<ResolvedUploads> uploads =
        ResolveUploads(*request, *service->uploads, principal);
    if (!uploads.ok()) {
      job->End(uploads.status());
      return;
    }
    JobContext context;
    context.registry = service->tpcs->registry();
    context.pool = service->compute_pool;
    context.cancel = &job->token();
    // --fault_injection=stall:STAGE@N stalls inside a stage (tests only).
    const std::unique_ptr<ProgressSink> faulty =
        service->faults.WrapProgress(job, &job->token());
    context.progress = faulty != nullptr ? faulty.get() : job;
    context.limits = LimitsFor(*service);
    context.sources.tpc = &job->tpc();
    if (uploads->model != nullptr)
      context.sources.model_bytes = *uploads->model;
    if (uploads->samples.has_value()) {
      context.sources.calibration_samples = &uploads->samples->samples();
    }
    context.on_stage_start = service->faults.HookFor(&job->token());
    // The parsed model refines the reservation admitted before the import.
    // A job runs samples on the shared compute threads and its own worker.
    const int in_flight = service->compute_pool->num_threads() + 1;
    context.on_preflight = [job, in_flight, request](const JobInput& input) {
      ReleaseDecodedPayload(request);
      return job->GrowReservation(EstimateJobMemoryBytes(input, in_flight));
    };
    result = RunQuantizeJob(*request, context);
  } catch (const std::bad_alloc&) {
    result = absl::ResourceExhaustedError("job ran out of memory");
  } catch (const std::exception& e) {
    result = absl::InternalError(absl::StrCat("job failed: ", e.what()));
  }
  service->tpcs->UpdateCacheMetrics(*service->metrics);
  if (result.ok()) {
    job->Succeed(*std::move(result));
  } else {
    job->End(result.status());
  }
}

void RunJob(ServiceContext* service, std::shared_ptr<JobState> job,
            const v1::QuantizeRequest* request, const std::string& principal) {
  if (!job->TryStart()) return;
  RunJobOnWorker(service, job.get(), request, principal);
  [[maybe_unused]] const int64_t reserved_bytes = job->reserved_bytes();
  job.reset();
  TrimHeapAfterJob(reserved_bytes);
}

}  // namespace

QuantizeReactor::QuantizeReactor(ServiceContext* service,
                                 grpc::CallbackServerContext* ctx,
                                 const v1::QuantizeRequest* request)
    : service_(service), ctx_(ctx), started_(absl::Now()) {
  service_->metrics->RpcStarted(RpcType::kServerStream, kMethod);
  service_->metrics->RpcMsgReceived(RpcType::kServerStream, kMethod);
  job_ = std::make_shared<JobState>(service_, this, request->request_id(),
                                    ctx_->peer());
  if (!request->request_id().empty()) {
    // Before any check, so even a rejected call is answered with its id.
    ctx_->AddInitialMetadata("x-request-id", MetadataSafe(request->request_id(),
                                                          kMaxRequestIdChars));
  }
  ctx_->AddInitialMetadata("x-job-id", job_->job_id());
  Start(request);
}

void QuantizeReactor::Start(const v1::QuantizeRequest* request) {
  // Who the client is decides which uploads its references can see.
  auto authenticated = service_->Authenticate(*ctx_);
  absl::Status status = authenticated.status();
  std::string principal;
  if (status.ok()) principal = *std::move(authenticated);
  if (status.ok() && service_->draining.load()) {
    status = absl::UnavailableError(
        "server is draining and accepts no new jobs; retry on another "
        "replica");
  }
  int64_t ref_bytes = 0;
  if (status.ok()) {
    status = CheckRequestShape(*request, service_->options, *service_->uploads,
                               principal, &ref_bytes);
  }
  absl::StatusOr<ResolvedTpc> tpc;
  if (status.ok()) {
    tpc = service_->tpcs->Resolve(request->tpc());
    service_->tpcs->UpdateCacheMetrics(*service_->metrics);
    if (!tpc.ok()) status = tpc.status();
  }
  if (status.ok()) {
    status = ValidateQuantizeRequest(*request, LimitsFor(*service_));
  }
  absl::StatusOr<std::unique_ptr<AdmissionTicket>> ticket;
  if (status.ok()) {
    // Only what is known without parsing the model, whose copies cover the
    // import: a job that cannot fit is rejected before anything is parsed.
    // The worker refines it from the parsed model (JobContext.on_preflight).
    // A referenced upload is held by the store and parsed (samples) by the
    // job, hence twice.
    ticket = service_->admission->TryAdmit(
        EstimateJobMemoryBytesBeforeImport(*request) + 2 * ref_bytes);
    if (!ticket.ok()) status = ticket.status();
  }
  if (!status.ok()) {
    LogFields fields = job_->Fields();
    fields.emplace_back("error", std::string(status.message()));
    fields.emplace_back("code", absl::StatusCodeToString(status.code()));
    Log(LogLevel::kInfo, "job rejected", fields);
    job_->End(std::move(status));
    return;
  }
  if (ctx_->deadline() != std::chrono::system_clock::time_point::max()) {
    job_->SetDeadline(absl::FromChrono(ctx_->deadline()));
  }
  LogFields fields = job_->Fields();
  fields.emplace_back("tpc", tpc->ref);
  fields.emplace_back("queue_position",
                      absl::StrCat((*ticket)->queue_position()));
  job_->Admitted(*std::move(ticket), *std::move(tpc));
  std::weak_ptr<JobState> weak = job_;
  job_->SetHeartbeatId(service_->heartbeats->Register([weak] {
    if (auto job = weak.lock()) job->Heartbeat();
  }));
  ServiceContext* service = service_;
  std::shared_ptr<JobState> job = job_;
  service_->job_pool->Schedule([service, job, request, principal] {
    RunJob(service, job, request, principal);
  });
  // Logged once the job is on its way, so the log line (a write to stdout)
  // does not delay the job's start. Only a job that had ended already (it
  // takes milliseconds) could log `job finished` first.
  Log(LogLevel::kInfo, "job accepted", fields);
}

void QuantizeReactor::StartWrite(const v1::JobEvent* event) {
  service_->metrics->RpcMsgSent(RpcType::kServerStream, kMethod);
  grpc::ServerWriteReactor<v1::JobEvent>::StartWrite(event);
}

void QuantizeReactor::WriteAndFinish(const v1::JobEvent* event,
                                     const absl::Status& status) {
  service_->metrics->RpcMsgSent(RpcType::kServerStream, kMethod);
  const grpc::Status grpc_status = ToGrpcStatus(status, job_->Fields());
  final_code_ = static_cast<int>(grpc_status.error_code());
  grpc::ServerWriteReactor<v1::JobEvent>::StartWriteAndFinish(
      event, grpc::WriteOptions(), grpc_status);
}

void QuantizeReactor::Finish(const absl::Status& status) {
  const grpc::Status grpc_status = ToGrpcStatus(status, job_->Fields());
  final_code_ = static_cast<int>(grpc_status.error_code());
  grpc::ServerWriteReactor<v1::JobEvent>::Finish(grpc_status);
}

void QuantizeReactor::OnWriteDone(bool ok) {
  // A write fails only on a broken stream: the client is gone even if
  // OnCancel has not arrived (yet). A queued job must not wait for it.
  if (!ok) job_->Cancel(CancelReason());
  job_->coalescer().OnWriteDone(ok);
}

absl::Status QuantizeReactor::CancelReason() const {
  // A client whose deadline expires resets the stream itself, which can reach
  // us a little before our copy of the deadline (set when the call arrived)
  // passes: a cancel within kDeadlineSlack of the deadline is the deadline.
  constexpr auto kDeadlineSlack = std::chrono::seconds(1);
  const bool deadline_passed =
      ctx_->deadline() != std::chrono::system_clock::time_point::max() &&
      ctx_->deadline() <= std::chrono::system_clock::now() + kDeadlineSlack;
  return deadline_passed ? absl::DeadlineExceededError("deadline exceeded")
                         : absl::CancelledError(
                               "call cancelled by the client or by server "
                               "shutdown");
}

void QuantizeReactor::OnCancel() {
  // Deadline or client cancel / disconnect / server shutdown.
  job_->Cancel(CancelReason());
}

void QuantizeReactor::OnDone() {
  service_->metrics->RpcHandled(RpcType::kServerStream, kMethod, final_code_,
                                Seconds(absl::Now() - started_));
  delete this;
}

}  // namespace quantd::server
