#include "server/data_generation_service.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/datagen/generate_job.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"
#include "quantd/v1/quantization_service.pb.h"
#include "server/job_limits.h"
#include "server/job_stream_reactor.h"

namespace quantd::server {
namespace {

// "A few samples per message": at most this many, and at most half the max
// message size in all.
constexpr int64_t kMaxSamplesPerEvent = 16;

// onnx_model or model_ref (an upload of this client, of kind MODEL).
absl::StatusOr<std::shared_ptr<const std::string>> FindModelUpload(
    const v1::GenerateDataRequest& r, UploadStore& uploads,
    const std::string& principal) {
  if (!IsSha256Hex(r.model_ref())) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_ref: \"", r.model_ref().substr(0, 80),
                     "\" is not a sha256 (64 lowercase hex digits)"));
  }
  auto entry = uploads.Get(r.model_ref(), principal);
  if (!entry.ok()) {
    return absl::NotFoundError(
        absl::StrCat("model_ref: ", entry.status().message()));
  }
  if (!entry->has_kind(v1::UPLOAD_KIND_MODEL)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model_ref: upload ", r.model_ref(), " is not a model upload"));
  }
  return entry->data;
}

absl::Status CheckModelFields(const v1::GenerateDataRequest& r,
                              const ServerOptions& o) {
  if (!r.onnx_model().empty() && !r.model_ref().empty()) {
    return absl::InvalidArgumentError(
        "onnx_model and model_ref are both set; send exactly one");
  }
  if (r.onnx_model().empty() && r.model_ref().empty()) {
    return absl::InvalidArgumentError(
        "onnx_model: empty; send the model bytes or upload them and set "
        "model_ref");
  }
  const int64_t max_model_bytes = o.max_model_mb << 20;
  if (static_cast<int64_t>(r.onnx_model().size()) > max_model_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "onnx_model: ", r.onnx_model().size(), " bytes exceeds the limit of ",
        max_model_bytes, " bytes (--max_model_mb)"));
  }
  return absl::OkStatus();
}

// The images as result events of at most kMaxSamplesPerEvent samples and
// half the max message size each.
absl::StatusOr<std::vector<v1::GenerateDataEvent>> SampleEvents(
    datagen::GeneratedData data, int64_t max_message) {
  const int64_t n = static_cast<int64_t>(data.samples.size());
  const int64_t sample_bytes =
      n == 0 ? 0 : data.samples[0].num_elements() * int64_t{4};
  if (sample_bytes + (int64_t{64} << 10) > max_message) {
    return absl::ResourceExhaustedError(
        absl::StrCat("one generated image is ", sample_bytes,
                     " bytes, over the max message size of ", max_message,
                     " bytes (--max_message_mb)"));
  }
  const int64_t per_event =
      std::clamp<int64_t>(max_message / 2 / std::max<int64_t>(sample_bytes, 1),
                          1, kMaxSamplesPerEvent);
  std::vector<v1::GenerateDataEvent> events;
  for (int64_t first = 0; first < n; first += per_event) {
    v1::GenerateDataResult* r = events.emplace_back().mutable_result();
    r->set_input_name(data.input_name);
    r->set_count(n);
    r->set_first_index(first);
    r->set_aligned_tensors(data.aligned_tensors);
    r->set_first_loss(data.first_loss);
    r->set_final_loss(data.final_loss);
    for (const std::string& w : data.warnings) r->add_warnings(w);
    for (int64_t i = first; i < std::min(n, first + per_event); ++i) {
      *r->add_samples() = TensorToSampleProto(data.samples[i], data.input_name);
      data.samples[i] = Tensor();  // the event holds it now
    }
  }
  return events;
}

// What GenerateData adds to the one job reactor (job_stream_reactor.h).
class GenerateDataRpc : public JobRpcDefaults<v1::GenerateDataEvent> {
 public:
  using Request = v1::GenerateDataRequest;
  using Event = v1::GenerateDataEvent;
  static constexpr char kMethod[] = "GenerateData";

  explicit GenerateDataRpc(const Request* request) : request_(request) {}

  // Before the import: the request, the model's bytes held twice (the
  // request or the upload, and the parsed model) and a fixed overhead; the
  // worker raises it from the model's input shape.
  absl::StatusOr<int64_t> Check(ServiceContext& service,
                                const std::string& principal) {
    const ServerOptions& o = service.options;
    RETURN_IF_ERROR(CheckModelFields(*request_, o));
    RETURN_IF_ERROR(
        datagen::ValidateGenerateDataRequest(*request_, o.max_samples));
    int64_t model_bytes = static_cast<int64_t>(request_->onnx_model().size());
    if (!request_->model_ref().empty()) {
      ASSIGN_OR_RETURN(auto upload,
                       FindModelUpload(*request_, *service.uploads, principal));
      model_bytes = static_cast<int64_t>(upload->size());
    }
    return static_cast<int64_t>(request_->ByteSizeLong()) + 2 * model_bytes +
           (int64_t{64} << 20);
  }

  absl::StatusOr<std::vector<Event>> Run(const JobCall& call) {
    std::shared_ptr<const std::string> upload;
    datagen::GenerateJobContext c;
    if (!request_->model_ref().empty()) {
      ASSIGN_OR_RETURN(
          upload,
          FindModelUpload(*request_, *call.service->uploads, call.principal));
      c.model_bytes = *upload;
    }
    c.run.pool = call.service->compute_pool;
    c.run.cancel = call.cancel;
    c.run.progress = call.progress;
    c.import = ImportOptionsFor(call.service->options);
    c.max_count = call.service->options.max_samples;
    const int threads = call.service->compute_pool->num_threads() + 1;
    c.on_import = [&call, threads](const Model& model,
                                   const datagen::DataGenOptions& options) {
      return call.grow_reservation(
          EstimateGenerateMemoryBytes(model, options, threads));
    };
    ASSIGN_OR_RETURN(datagen::GeneratedData data,
                     datagen::RunGenerateDataJob(*request_, c));
    upload.reset();
    return SampleEvents(std::move(data), call.service->max_message_bytes());
  }

 private:
  const Request* const request_;
};

}  // namespace

grpc::ServerWriteReactor<v1::GenerateDataEvent>*
DataGenerationServiceImpl::GenerateData(
    grpc::CallbackServerContext* ctx, const v1::GenerateDataRequest* request) {
  return JobStreamReactor<GenerateDataRpc>::Start(service_, ctx, request);
}

}  // namespace quantd::server
