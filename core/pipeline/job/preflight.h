// One preflight for every way a job runs (server, quantctl, batch farm): the
// request checked once, its TPC resolved once, its model imported once and
// its samples decoded once.
//
// The server splits it: ValidateQuantizeRequest and ResolveTpc (cheap) on the
// gRPC thread before admission, PreflightJob (the import) on the job's worker,
// whose estimate then refines the admission ticket. The engine
// (RunQuantizeJob(JobInput, ...)) never reads the request's bytes again.
#ifndef QUANTD_CORE_PIPELINE_JOB_PREFLIGHT_H_
#define QUANTD_CORE_PIPELINE_JOB_PREFLIGHT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/datagen/options.h"
#include "core/graph/graph.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/gptq/gptq_memory.h"
#include "core/pipeline/job/activation_sizes.h"
#include "core/pipeline/job/job_spec.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/registry.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

using TpcRegistry = tpc::TpcRegistry;

// Limits on untrusted input; the server exposes them as flags and in
// GetServerInfo.
struct JobLimits {
  int64_t max_model_bytes = int64_t{1} << 31;  // protobuf's 2 GiB
  int64_t max_nodes = 100000;
  int64_t max_tensor_elements = int64_t{1} << 31;
  int64_t max_samples = 10000;
  int64_t max_sample_bytes = int64_t{4} << 30;  // all samples together
};

// A TPC reference resolved: what the job uses and what every message about
// it (the server's Accepted event, the result, the report) calls it.
struct ResolvedTpc {
  tpc::TpcPtr tpc;
  // "name@version"; an inline TPC without a name or version says "inline".
  std::string ref;
  std::string digest;
};

// Errors name the field: tpc.name (listing what exists), tpc.inline_tpc,
// tpc.inline_json.
absl::StatusOr<ResolvedTpc> ResolveTpc(const v1::TpcRef& ref,
                                       const TpcRegistry& registry);

// The first of ValidateQuantizeRequest's checks, for callers that look
// uploads up before the rest: the model as bytes or a model_ref (not both,
// within the size limit), the samples inline or as a samples_ref (not
// both).
absl::Status CheckModelAndSampleSources(const v1::QuantizeRequest& request,
                                        const JobLimits& limits);

// Cheap checks that need no model parsing: sizes, sample tensors (dtype,
// dims vs bytes, NaN/Inf), TPC reference syntax, and every option: the
// request's spec (ResolveJobSpec), resolved once for the whole job.
absl::StatusOr<JobSpec> ValidateQuantizeRequest(
    const v1::QuantizeRequest& request, const JobLimits& limits);

// The request parsed once: everything the engine reads from it.
struct JobInput {
  // Every option of the request; the engine never reads the request.
  JobSpec spec;
  ResolvedTpc tpc;
  Model model;  // as imported
  // At most options.max_calibration_samples.
  std::vector<SampleFeeds> calibration;
  // The evaluation samples, or (none sent) the first spec.report_samples
  // calibration samples.
  std::vector<SampleFeeds> evaluation;
  bool evaluation_samples_sent = false;
  int64_t model_bytes = 0;  // serialized
  // Of those, the constants inside If/Loop bodies (BodyConstantBytes).
  int64_t body_constant_bytes = 0;
  std::string model_sha256;  // of the serialized model, for the report
  int64_t sample_bytes = 0;  // raw bytes of every sample sent
  // The request's own model bytes and calibration samples (not what a
  // model_ref / samples_ref points to): the server frees them once the job
  // has this input (JobContext.on_preflight).
  int64_t request_payload_bytes = 0;
  // One sample's activations as the memory model counts them
  // (activation_sizes.h, job_memory.h).
  ActivationSizes activations;
  // GPTQ's stage when the request asks for it (zeros otherwise), from the
  // same inferred shapes.
  GptqStageMemory gptq_stage;
  // Warnings of the stages before RunStages (the generate stage's), carried
  // into the report.
  std::vector<std::string> warnings;
};

// Imports the model from `model_bytes` and decodes `calibration_samples`
// (the request's own, or what its model_ref / samples_ref point to) and the
// request's evaluation samples. The request must have passed
// ValidateQuantizeRequest, which gave `spec`; samples from a reference are
// checked here.
absl::StatusOr<JobInput> PreflightJob(
    const v1::QuantizeRequest& request, JobSpec spec,
    absl::string_view model_bytes,
    const google::protobuf::RepeatedPtrField<v1::Sample>& calibration_samples,
    ResolvedTpc tpc, const JobLimits& limits);

// The whole preflight from a request that carries its model and samples.
absl::StatusOr<JobInput> PreflightJob(const v1::QuantizeRequest& request,
                                      const TpcRegistry& registry,
                                      const JobLimits& limits);

// Whether calibration keeps the float values of the report's samples
// (kept_float_values.h): not when evaluation samples were sent, nor with
// GPTQ or mixed precision, whose stages would hold them for long. The
// estimates count them, up to kKeptFloatValuesBudgetBytes.
bool KeepsFloatValuesForReport(const JobSpec& spec,
                               bool evaluation_samples_sent);

// Pieces of the preflight that the memory model (job_memory.h) shares.
// The import's limits.
ImportOptions ImportOptionsFor(const JobLimits& limits);
// The raw tensor bytes of `samples`.
int64_t RawSampleBytes(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples);
// Bytes of the constants only If/Loop/Scan bodies use: their own, and the
// main graph's initializers that only bodies read (from the outer scope).
int64_t BodyConstantBytes(const Graph& graph);
// GPTQ's stage when the job may run it (EstimateGptqStageMemory), for
// `samples` samples of the shapes `model` holds (InferSampleShapes).
GptqStageMemory GptqStageFor(const JobSpec& spec, const Model& model,
                             int64_t samples);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_PREFLIGHT_H_
