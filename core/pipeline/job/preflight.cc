#include "core/pipeline/job/preflight.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/datagen/generated_calibration.h"
#include "core/graph/onnx_import.h"
#include "core/hessian/weights_hessian.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/export/export_formats.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/job/activation_sizes.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/mixed_precision/sensitivity.h"
#include "core/pipeline/quality_target/quality_target.h"
#include "core/pipeline/quality_target/target_gptq_trial.h"
#include "core/quantizers/types.h"
#include "core/tpc/framework_info.h"
#include "core/tpc/json_io.h"
#include "core/tpc/tpc_ref.h"
#include "core/util/request_checks.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Options the pipeline cannot honour are rejected, never ignored.
absl::Status RejectUnsupported(const v1::QuantizeRequest& r,
                               const PtqOptions& o) {
  const auto unimplemented = [](const std::string& what) {
    return absl::UnimplementedError(
        absl::StrCat(what, " is not implemented by this quantd version"));
  };
  RETURN_IF_ERROR(ValidateMixedPrecisionConfig(r.mixed_precision()));
  if (GptqMayRun(r)) {
    RETURN_IF_ERROR(ResolveGptqOptions(r.gptq()).status());
  }
  if (o.weights_second_moment_correction) {
    return unimplemented("quantization.weights_second_moment_correction");
  }
  if (o.shift_negative_threshold_recalculation) {
    return unimplemented("quantization.shift_negative_threshold_recalculation");
  }
  return absl::OkStatus();
}

}  // namespace

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

GptqStageMemory GptqStageFor(const v1::QuantizeRequest& request,
                             const Model& model, int64_t samples) {
  if (!GptqMayRun(request)) return {};
  auto options = ResolveGptqOptions(request.gptq());
  if (!options.ok()) return {};
  if (options->max_samples > 0) {
    samples = std::min<int64_t>(samples, options->max_samples);
  }
  return EstimateGptqStageMemory(model, *options, samples);
}

namespace {

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
  if (!samples) {
    return absl::InvalidArgumentError(
        "calibration_samples: no samples (at least one is needed, or "
        "generated_calibration)");
  }
  return absl::OkStatus();
}

// The input shape of the images the job will generate: what the
// activation estimate infers the model's shapes for. Empty when the shape
// is not known. Nothing is allocated: an image of any size is estimated.
InputShapes GeneratedShapeProbe(const v1::QuantizeRequest& request,
                                const Model& model) {
  if (!request.has_generated_calibration() || model.graph.inputs.empty()) {
    return {};
  }
  const ValueInfo& in = model.graph.inputs[0];
  std::vector<int64_t> shape(request.generated_calibration().shape().begin(),
                             request.generated_calibration().shape().end());
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
int64_t GeneratedSampleBytes(const v1::QuantizeRequest& request,
                             const InputShapes& probe) {
  if (probe.empty()) return 0;
  constexpr double kCap = static_cast<double>(int64_t{1} << 50);
  double bytes = 4.0 * static_cast<double>(std::max<int64_t>(
                           0, request.generated_calibration().count()));
  for (int64_t d : probe.begin()->second) bytes *= static_cast<double>(d);
  return static_cast<int64_t>(std::min(bytes, kCap));
}

}  // namespace

int ReportSampleCount(int report_samples) {
  if (report_samples == 0) return kDefaultReportSamples;
  return report_samples < 0 ? -1 : report_samples;
}

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

absl::Status ValidateQuantizeRequest(const v1::QuantizeRequest& request,
                                     const JobLimits& limits) {
  if (request.onnx_model().empty() && request.model_ref().empty()) {
    return absl::InvalidArgumentError(
        "onnx_model: empty (send the model bytes or a model_ref)");
  }
  if (static_cast<int64_t>(request.onnx_model().size()) >
      limits.max_model_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("onnx_model: ", request.onnx_model().size(),
                     " bytes, the limit is ", limits.max_model_bytes));
  }
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
  if (request.report_samples() < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report_samples: must be -1 (all), 0 (the default, 16) or a count, "
        "got ",
        request.report_samples()));
  }
  if (request.has_quality_target()) {
    RETURN_IF_ERROR(ValidateQualityTarget(request.quality_target()));
  }
  RETURN_IF_ERROR(CheckRequestId(request.request_id()));
  RETURN_IF_ERROR(CheckNumThreads(request.num_threads(), "num_threads"));
  if (!v1::ActivationStorage_IsValid(
          request.export_options().activation_storage())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "export_options.activation_storage: ",
        request.export_options().activation_storage(),
        " is not ACTIVATION_STORAGE_UNSPECIFIED, _UINT8, _INT8 or _AUTO"));
  }
  if (!v1::WeightStorage_IsValid(request.export_options().weight_storage())) {
    return absl::InvalidArgumentError(
        absl::StrCat("export_options.weight_storage: ",
                     request.export_options().weight_storage(),
                     " is not WEIGHT_STORAGE_UNSPECIFIED, _INT8 or _UINT8"));
  }
  if (request.quantization().has_framework_info()) {
    // Checked here, not first when the TPC is attached after import.
    tpc::OnnxFrameworkInfo framework_info = tpc::OnnxFrameworkInfo::Default();
    if (absl::Status st = framework_info.ApplyOverride(
            request.quantization().framework_info());
        !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantization.", st.message()));
    }
  }
  RETURN_IF_ERROR(ValidateExportFormats(request.export_options()));
  ASSIGN_OR_RETURN(
      PtqOptions options,
      ResolvePtqOptions(request.quantization(), request.gptq().enabled()));
  RETURN_IF_ERROR(RejectUnsupported(request, options));
  // What the checks above do not name: enums and numbers anywhere else.
  return CheckEnumsAndNumbers(request);
}

absl::StatusOr<JobInput> PreflightJob(
    const v1::QuantizeRequest& request, absl::string_view model_bytes,
    const google::protobuf::RepeatedPtrField<v1::Sample>& calibration_samples,
    ResolvedTpc tpc, const JobLimits& limits) {
  JobInput input;
  input.request = &request;
  input.tpc = std::move(tpc);
  ASSIGN_OR_RETURN(input.options, ResolvePtqOptions(request.quantization(),
                                                    request.gptq().enabled()));
  if (model_bytes.empty()) {
    return absl::InvalidArgumentError("onnx_model: empty");
  }
  if (&calibration_samples != &request.calibration_samples()) {
    // From a samples_ref: not seen by ValidateQuantizeRequest.
    RETURN_IF_ERROR(
        ValidateSampleProtos(calibration_samples, "calibration_samples",
                             limits.max_samples, limits.max_sample_bytes));
  }
  const bool generated = request.has_generated_calibration();
  if (calibration_samples.empty() && !generated) {
    return absl::InvalidArgumentError(
        "calibration_samples: no samples (at least one is needed)");
  }
  auto imported = ImportOnnx(model_bytes, ImportOptionsFor(limits));
  if (!imported.ok()) return Prefixed("onnx_model", imported.status());
  input.model = *std::move(imported);
  input.model_bytes = static_cast<int64_t>(model_bytes.size());
  input.model_sha256 = Sha256Hex(model_bytes);
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
    const InputShapes probe = GeneratedShapeProbe(request, input.model);
    input.sample_bytes += GeneratedSampleBytes(request, probe);
    Model shaped = input.model;
    const bool inferred = InferSampleShapes(probe, &shaped);
    input.activations = ActivationBytesPerSample(
        shaped, inferred, probe, request.mixed_precision().sensitivity_depth());
    if (GptqMayRun(request)) {
      // The generated images' shapes are not counted: the declared ones.
      Model declared = input.model;
      InferSampleShapes(InputShapes{}, &declared);
      input.gptq_stage = GptqStageFor(request, declared,
                                      request.generated_calibration().count());
    }
    ASSIGN_OR_RETURN(input.generate_options,
                     datagen::DataGenOptionsFromGeneratedCalibration(
                         request.generated_calibration()));
    if (request.evaluation_samples_size() > 0) {
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
  const int max_calibration = input.options.max_calibration_samples;
  if (max_calibration > 0 &&
      static_cast<int>(input.calibration.size()) > max_calibration) {
    input.calibration.resize(max_calibration);
  }
  if (request.evaluation_samples_size() > 0) {
    ASSIGN_OR_RETURN(
        input.evaluation,
        DecodeSamples(request.evaluation_samples(), input.model.graph.inputs,
                      "evaluation_samples", max_bytes));
  } else {
    input.evaluation = input.calibration;
    const int n = ReportSampleCount(request.report_samples());
    if (n >= 0 && static_cast<int>(input.evaluation.size()) > n) {
      input.evaluation.resize(n);
    }
  }
  Model shaped = input.model;
  const bool inferred = InferSampleShapes(input.calibration, &shaped);
  input.activations =
      ActivationBytesPerSample(shaped, inferred, input.calibration,
                               request.mixed_precision().sensitivity_depth());
  input.gptq_stage = GptqStageFor(
      request, shaped, static_cast<int64_t>(input.calibration.size()));
  return input;
}

absl::StatusOr<JobInput> PreflightJob(const v1::QuantizeRequest& request,
                                      const TpcRegistry& registry,
                                      const JobLimits& limits) {
  RETURN_IF_ERROR(ValidateQuantizeRequest(request, limits));
  if (request.onnx_model().empty()) {
    return absl::FailedPreconditionError(
        "model_ref: uploaded models must be resolved to onnx_model by the "
        "server before the job runs");
  }
  if (request.calibration_samples_size() == 0 &&
      !request.has_generated_calibration()) {
    return absl::FailedPreconditionError(
        "samples_ref: uploaded samples must be resolved by the server before "
        "the job runs");
  }
  ASSIGN_OR_RETURN(ResolvedTpc tpc, ResolveTpc(request.tpc(), registry));
  return PreflightJob(request, request.onnx_model(),
                      request.calibration_samples(), std::move(tpc), limits);
}

bool KeepsFloatValuesForReport(const v1::QuantizeRequest& request) {
  return request.evaluation_samples_size() == 0 && !request.gptq().enabled() &&
         !MixedPrecisionRequested(request.mixed_precision());
}

}  // namespace quantd
