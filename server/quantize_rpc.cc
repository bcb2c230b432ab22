#include "server/quantize_rpc.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"
#include "quantd/v1/quantization_service.pb.h"
#include "server/job_limits.h"
#include "server/result_chunks.h"

namespace quantd::server {

namespace {

// Checks that belong to the service rather than the pipeline: which of the
// alternative fields are set, and that referenced uploads exist.
absl::Status CheckUploadRefs(const v1::QuantizeRequest& request,
                             UploadStore& uploads, const std::string& principal,
                             int64_t* ref_bytes) {
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
// samples stay: the job asks whether any were sent.
void ReleaseDecodedPayload(v1::QuantizeRequest* request) {
  google::protobuf::RepeatedPtrField<v1::Sample>().Swap(
      request->mutable_calibration_samples());
  std::string().swap(*request->mutable_onnx_model());
}

}  // namespace

absl::StatusOr<int64_t> QuantizeRpc::Check(ServiceContext& service,
                                           const std::string& principal) {
  // What only the server has (the uploads, the TPC catalog) between the
  // engine's own checks, which the job does not repeat (JobContext.sources).
  const JobLimits limits = JobLimitsFor(service.options);
  RETURN_IF_ERROR(CheckModelAndSampleSources(*request_, limits));
  int64_t ref_bytes = 0;
  RETURN_IF_ERROR(
      CheckUploadRefs(*request_, *service.uploads, principal, &ref_bytes));
  absl::StatusOr<ResolvedTpc> tpc = service.tpcs->Resolve(request_->tpc());
  service.tpcs->UpdateCacheMetrics(*service.metrics);
  if (!tpc.ok()) return tpc.status();
  tpc_ = *std::move(tpc);
  ASSIGN_OR_RETURN(spec_, ValidateQuantizeRequest(*request_, limits));
  // Only what is known without parsing the model, whose copies cover the
  // import: a job that cannot fit is rejected before anything is parsed.
  // The worker refines it from the parsed model (JobContext.on_preflight).
  // A referenced upload is held by the store and parsed (samples) by the
  // job, hence twice.
  return EstimateJobMemoryBytesBeforeImport(*request_, spec_) + 2 * ref_bytes;
}

bool QuantizeRpc::Accepted(int queue_position, v1::JobEvent* event,
                           LogFields* fields) {
  event->mutable_accepted()->set_queue_position(queue_position);
  event->mutable_accepted()->set_tpc(tpc_.ref);
  fields->emplace_back("tpc", tpc_.ref);
  return true;
}

absl::StatusOr<std::vector<v1::JobEvent>> QuantizeRpc::Run(
    const JobCall& call) {
  ServiceContext& service = *call.service;
  ASSIGN_OR_RETURN(ResolvedUploads uploads,
                   ResolveUploads(*request_, *service.uploads, call.principal));
  JobContext context;
  context.registry = service.tpcs->registry();
  context.pool = service.compute_pool;
  context.cancel = call.cancel;
  context.progress = call.progress;
  context.limits = JobLimitsFor(service.options);
  context.sources.tpc = &tpc_;
  context.sources.spec = &spec_;
  if (uploads.model != nullptr) context.sources.model_bytes = *uploads.model;
  if (uploads.samples.has_value()) {
    context.sources.calibration_samples = &uploads.samples->samples();
  }
  context.on_stage_start = call.on_stage_start;
  // The parsed model refines the reservation admitted before the import.
  // A job runs samples on the shared compute threads and its own worker.
  const int in_flight = service.compute_pool->num_threads() + 1;
  // A quality target's trials are reserved for as the job reaches them.
  JobMemoryReservation reservation;
  context.on_preflight = [this, &call, &reservation,
                          in_flight](const JobInput& input) {
    ReleaseDecodedPayload(request_);
    reservation = JobMemoryReservation(input, in_flight);
    RETURN_IF_ERROR(
        call.service->admission->CheckWholeBudget(reservation.whole()));
    return call.grow_reservation(reservation.bytes());
  };
  context.on_memory_stage = [&call, &reservation](JobMemoryStage stage) {
    return call.grow_reservation_waiting(reservation.Reach(stage));
  };
  absl::StatusOr<v1::QuantizeResult> result =
      RunQuantizeJob(*request_, context);
  service.tpcs->UpdateCacheMetrics(*service.metrics);
  if (!result.ok()) return result.status();
  return ResultEvents<v1::JobEvent>(*std::move(result),
                                    service.max_message_bytes());
}

}  // namespace quantd::server
