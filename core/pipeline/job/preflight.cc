#include "core/pipeline/job/preflight.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/datagen/generated_calibration.h"
#include "core/graph/onnx_import.h"
#include "core/hessian/weights_hessian.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/job/activation_sizes.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/mixed_precision/sensitivity.h"
#include "core/quantizers/types.h"
#include "core/tpc/json_io.h"
#include "core/tpc/tpc_ref.h"
#include "core/util/request_checks.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"

namespace quantd {

ImportOptions ImportOptionsFor(const JobLimits& limits) {
  ImportOptions options;
  options.max_nodes = limits.max_nodes;
  options.max_tensor_bytes = std::min<int64_t>(options.max_tensor_bytes,
                                               limits.max_tensor_elements * 8);
  options.max_model_bytes = limits.max_model_bytes;
  return options;
}

int64_t RawSampleBytes(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples) {
  int64_t bytes = 0;
  for (const auto& s : samples) {
    for (const auto& t : s.inputs()) bytes += t.raw_data().size();
  }
  return bytes;
}

namespace {

// What the If/Loop/Scan bodies of a graph hold, at any depth: the bytes of
// their own constants (initializers and Constant values) and the names
// their nodes read.
struct BodyContents {
  int64_t constant_bytes = 0;
  absl::flat_hash_set<absl::string_view> reads;
};

void WalkBodies(const Graph& graph, BodyContents* contents) {
  for (const Node& node : graph.nodes) {
    for (const auto& [key, attribute] : node.attributes) {
      if (attribute.g == nullptr) continue;
      const Graph& body = *attribute.g;
      for (const auto& [name, tensor] : body.initializers) {
        contents->constant_bytes += static_cast<int64_t>(tensor.byte_size());
      }
      for (const Node& inner : body.nodes) {
        for (const std::string& input : inner.inputs) {
          contents->reads.insert(input);
        }
        if (inner.op_type != "Constant") continue;
        for (const auto& [k, value] : inner.attributes) {
          contents->constant_bytes += static_cast<int64_t>(value.t.byte_size());
        }
      }
      WalkBodies(body, contents);
    }
  }
}

}  // namespace

int64_t BodyConstantBytes(const Graph& graph) {
  BodyContents bodies;
  WalkBodies(graph, &bodies);
  absl::flat_hash_set<absl::string_view> main_reads;
  for (const Node& node : graph.nodes) {
    for (const std::string& input : node.inputs) main_reads.insert(input);
  }
  int64_t bytes = bodies.constant_bytes;
  for (const auto& [name, tensor] : graph.initializers) {
    if (bodies.reads.contains(name) && !main_reads.contains(name)) {
      bytes += static_cast<int64_t>(tensor.byte_size());
    }
  }
  return bytes;
}

GptqStageMemory GptqStageFor(const JobSpec& spec, const Model& model,
                             int64_t samples) {
  if (!spec.gptq.has_value()) return {};
  if (spec.gptq->max_samples > 0) {
    samples = std::min<int64_t>(samples, spec.gptq->max_samples);
  }
  return EstimateGptqStageMemory(model, *spec.gptq, samples);
}

namespace {

// One wording each, wherever the job finds the model or the samples
// missing.
absl::Status NoModelError() {
  return absl::InvalidArgumentError(
      "onnx_model: empty (send the model bytes or a model_ref)");
}
// A model_ref or samples_ref the caller did not resolve (the server reads
// uploads in place, JobContext.sources).
absl::Status UnresolvedRefError(const char* field) {
  return absl::FailedPreconditionError(
      absl::StrCat(field,
                   ": uploads must be resolved by the server before the job "
                   "runs"));
}
absl::Status NoSamplesError() {
  return absl::InvalidArgumentError(
      "calibration_samples: no samples (at least one is needed, or "
      "generated_calibration)");
}

// Exactly one of calibration_samples, samples_ref and generated_calibration.
absl::Status ValidateCalibrationSource(const v1::QuantizeRequest& request,
                                       const JobLimits& limits) {
  const bool samples =
      request.calibration_samples_size() > 0 || !request.samples_ref().empty();
  if (request.has_generated_calibration()) {
    if (samples) {
      return absl::InvalidArgumentError(absl::StrCat(
          "generated_calibration: set together with ",
          request.samples_ref().empty() ? "calibration_samples" : "samples_ref",
          "; send samples or generated_calibration, not both"));
    }
    return datagen::ValidateGeneratedCalibration(
        request.generated_calibration(), limits.max_samples);
  }
  if (!samples) return NoSamplesError();
  return absl::OkStatus();
}

// The input shape of the images the job will generate: what the
// activation estimate infers the model's shapes for. Empty when the shape
// is not known. Nothing is allocated: an image of any size is estimated.
InputShapes GeneratedShapeProbe(const JobSpec& spec, const Model& model) {
  if (!spec.generate.has_value() || model.graph.inputs.empty()) return {};
  const ValueInfo& in = model.graph.inputs[0];
  std::vector<int64_t> shape = spec.generate->shape;
  if (shape.empty() && in.has_shape) shape = in.shape;
  if (shape.size() < 3) return {};
  std::vector<int64_t> image = {1, shape[shape.size() - 3],
                                shape[shape.size() - 2], shape.back()};
  for (int64_t d : image) {
    if (d <= 0) return {};
  }
  return {{in.name, image}};
}

// The generated images' raw bytes (count float images of the probe's
// shape), saturating at 2^50.
int64_t GeneratedSampleBytes(const JobSpec& spec, const InputShapes& probe) {
  if (probe.empty()) return 0;
  constexpr double kCap = static_cast<double>(int64_t{1} << 50);
  double bytes =
      4.0 * static_cast<double>(std::max<int64_t>(0, spec.generate->count));
  for (int64_t d : probe.begin()->second) bytes *= static_cast<double>(d);
  return static_cast<int64_t>(std::min(bytes, kCap));
}

}  // namespace

absl::StatusOr<ResolvedTpc> ResolveTpc(const v1::TpcRef& ref,
                                       const TpcRegistry& registry) {
  ResolvedTpc out;
  const char* field = "tpc.inline_tpc";
  switch (ref.source_case()) {
    case v1::TpcRef::kName: {
      auto entry = registry.ResolveEntry(ref.name());
      if (!entry.ok()) return Prefixed("tpc.name", entry.status());
      out.tpc = entry->tpc;
      out.ref = absl::StrCat(entry->name, "@", entry->version);
      out.digest = entry->digest;
      return out;
    }
    case v1::TpcRef::kInlineTpc: {
      auto resolved = registry.ResolveInline(ref.inline_tpc());
      if (!resolved.ok()) return Prefixed(field, resolved.status());
      out.tpc = *std::move(resolved);
      break;
    }
    case v1::TpcRef::kInlineJson: {
      field = "tpc.inline_json";
      auto parsed = tpc::TpcFromJson(ref.inline_json());
      if (!parsed.ok()) return Prefixed(field, parsed.status());
      auto resolved = registry.ResolveInline(*parsed);
      if (!resolved.ok()) return Prefixed(field, resolved.status());
      out.tpc = *std::move(resolved);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "tpc: no TPC given (set tpc.name, tpc.inline_tpc or "
          "tpc.inline_json)");
  }
  const auto or_inline = [](const std::string& s) {
    return s.empty() ? std::string("inline") : s;
  };
  out.ref = absl::StrCat(or_inline(out.tpc->name()), "@",
                         or_inline(out.tpc->version()));
  out.digest = tpc::TpcDigest(*out.tpc);
  return out;
}

absl::Status CheckModelAndSampleSources(const v1::QuantizeRequest& request,
                                        const JobLimits& limits) {
  if (!request.onnx_model().empty() && !request.model_ref().empty()) {
    return absl::InvalidArgumentError(
        "onnx_model and model_ref are both set; send exactly one");
  }
  if (request.onnx_model().empty() && request.model_ref().empty()) {
    return NoModelError();
  }
  if (static_cast<int64_t>(request.onnx_model().size()) >
      limits.max_model_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "onnx_model: ", request.onnx_model().size(),
        " bytes exceeds the limit of ", limits.max_model_bytes, " bytes"));
  }
  if (!request.samples_ref().empty() &&
      request.calibration_samples_size() > 0) {
    return absl::InvalidArgumentError(
        "calibration_samples and samples_ref are both set; send exactly one");
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> ValidateQuantizeRequest(
    const v1::QuantizeRequest& request, const JobLimits& limits) {
  RETURN_IF_ERROR(CheckModelAndSampleSources(request, limits));
  RETURN_IF_ERROR(ValidateCalibrationSource(request, limits));
  RETURN_IF_ERROR(
      ValidateSampleProtos(request.calibration_samples(), "calibration_samples",
                           limits.max_samples, limits.max_sample_bytes));
  RETURN_IF_ERROR(ValidateSampleProtos(request.evaluation_samples(),
                                       "evaluation_samples", limits.max_samples,
                                       limits.max_sample_bytes));
  switch (request.tpc().source_case()) {
    case v1::TpcRef::kName: {
      auto ref = tpc::ParseTpcRef(request.tpc().name());
      if (!ref.ok()) return Prefixed("tpc.name", ref.status());
      break;
    }
    case v1::TpcRef::SOURCE_NOT_SET:
      return absl::InvalidArgumentError(
          "tpc: no TPC given (set tpc.name, tpc.inline_tpc or "
          "tpc.inline_json)");
    default:
      break;
  }
  RETURN_IF_ERROR(CheckRequestId(request.request_id()));
  RETURN_IF_ERROR(CheckNumThreads(request.num_threads(), "num_threads"));
  ASSIGN_OR_RETURN(JobSpec spec, ResolveJobSpec(request));
  // What the checks above do not name: enums and numbers anywhere else.
  RETURN_IF_ERROR(CheckEnumsAndNumbers(request));
  return spec;
}

absl::StatusOr<JobInput> PreflightJob(
    const v1::QuantizeRequest& request, JobSpec resolved,
    absl::string_view model_bytes,
    const google::protobuf::RepeatedPtrField<v1::Sample>& calibration_samples,
    ResolvedTpc tpc, const JobLimits& limits) {
  JobInput input;
  input.spec = std::move(resolved);
  const JobSpec& spec = input.spec;
  input.tpc = std::move(tpc);
  if (model_bytes.empty()) {
    return request.model_ref().empty() ? NoModelError()
                                       : UnresolvedRefError("model_ref");
  }
  if (&calibration_samples != &request.calibration_samples()) {
    // From a samples_ref: not seen by ValidateQuantizeRequest.
    RETURN_IF_ERROR(
        ValidateSampleProtos(calibration_samples, "calibration_samples",
                             limits.max_samples, limits.max_sample_bytes));
  }
  const bool generated = spec.generate.has_value();
  if (calibration_samples.empty() && !generated) {
    return request.samples_ref().empty() ? NoSamplesError()
                                         : UnresolvedRefError("samples_ref");
  }
  auto imported = ImportOnnx(model_bytes, ImportOptionsFor(limits));
  if (!imported.ok()) return Prefixed("onnx_model", imported.status());
  input.model = *std::move(imported);
  input.model_bytes = static_cast<int64_t>(model_bytes.size());
  input.model_sha256 = Sha256Hex(model_bytes);
  input.evaluation_samples_sent = request.evaluation_samples_size() > 0;
  input.body_constant_bytes = BodyConstantBytes(input.model.graph);
  input.sample_bytes = RawSampleBytes(calibration_samples) +
                       RawSampleBytes(request.evaluation_samples());
  if (model_bytes.data() == request.onnx_model().data()) {
    input.request_payload_bytes += input.model_bytes;
  }
  if (&calibration_samples == &request.calibration_samples()) {
    input.request_payload_bytes += RawSampleBytes(calibration_samples);
  }

  const int64_t max_bytes = limits.max_sample_bytes;
  if (generated) {
    // The generate stage fills calibration (and evaluation) later.
    const InputShapes probe = GeneratedShapeProbe(spec, input.model);
    input.sample_bytes += GeneratedSampleBytes(spec, probe);
    Model shaped = input.model;
    const bool inferred = InferSampleShapes(probe, &shaped);
    input.activations = ActivationBytesPerSample(
        shaped, inferred, probe, spec.mixed_precision.sensitivity_depth);
    if (spec.GptqMayRun()) {
      // The generated images' shapes are not counted: the declared ones.
      Model declared = input.model;
      InferSampleShapes(InputShapes{}, &declared);
      input.gptq_stage = GptqStageFor(spec, declared, spec.generate->count);
    }
    if (input.evaluation_samples_sent) {
      ASSIGN_OR_RETURN(
          input.evaluation,
          DecodeSamples(request.evaluation_samples(), input.model.graph.inputs,
                        "evaluation_samples", max_bytes));
    }
    return input;
  }
  ASSIGN_OR_RETURN(input.calibration,
                   DecodeSamples(calibration_samples, input.model.graph.inputs,
                                 "calibration_samples", max_bytes));
  const int max_calibration = spec.ptq.max_calibration_samples;
  if (max_calibration > 0 &&
      static_cast<int>(input.calibration.size()) > max_calibration) {
    input.calibration.resize(max_calibration);
  }
  if (input.evaluation_samples_sent) {
    ASSIGN_OR_RETURN(
        input.evaluation,
        DecodeSamples(request.evaluation_samples(), input.model.graph.inputs,
                      "evaluation_samples", max_bytes));
  } else {
    input.evaluation = input.calibration;
    const int n = spec.report_samples;
    if (n >= 0 && static_cast<int>(input.evaluation.size()) > n) {
      input.evaluation.resize(n);
    }
  }
  Model shaped = input.model;
  const bool inferred = InferSampleShapes(input.calibration, &shaped);
  input.activations =
      ActivationBytesPerSample(shaped, inferred, input.calibration,
                               spec.mixed_precision.sensitivity_depth);
  input.gptq_stage = GptqStageFor(
      spec, shaped, static_cast<int64_t>(input.calibration.size()));
  return input;
}

absl::StatusOr<JobInput> PreflightJob(const v1::QuantizeRequest& request,
                                      const TpcRegistry& registry,
                                      const JobLimits& limits) {
  ASSIGN_OR_RETURN(JobSpec spec, ValidateQuantizeRequest(request, limits));
  ASSIGN_OR_RETURN(ResolvedTpc tpc, ResolveTpc(request.tpc(), registry));
  return PreflightJob(request, std::move(spec), request.onnx_model(),
                      request.calibration_samples(), std::move(tpc), limits);
}

bool KeepsFloatValuesForReport(const JobSpec& spec,
                               bool evaluation_samples_sent) {
  return !evaluation_samples_sent && !spec.gptq_enabled &&
         !spec.mixed_precision.Requested();
}

}  // namespace quantd
