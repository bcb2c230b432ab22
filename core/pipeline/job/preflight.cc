#include "core/pipeline/job/preflight.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/datagen/generate_job.h"
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
#include "core/quantizers/types.h"
#include "core/tpc/framework_info.h"
#include "core/tpc/json_io.h"
#include "core/tpc/tpc_ref.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

absl::Status Prefixed(absl::string_view field, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(field, ": ", status.message()));
}

// Options the pipeline cannot honour are rejected, never ignored.
absl::Status RejectUnsupported(const v1::QuantizeRequest& r,
                               const PtqOptions& o) {
  const auto unimplemented = [](const std::string& what) {
    return absl::UnimplementedError(
        absl::StrCat(what, " is not implemented by this quantd version"));
  };
  RETURN_IF_ERROR(ValidateMixedPrecisionConfig(r.mixed_precision()));
  if (r.gptq().enabled()) {
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

ImportOptions ImportOptionsFor(const JobLimits& limits) {
  ImportOptions options;
  options.max_nodes = limits.max_nodes;
  options.max_tensor_bytes = std::min<int64_t>(options.max_tensor_bytes,
                                               limits.max_tensor_elements * 8);
  options.max_model_bytes = limits.max_model_bytes;
  return options;
}

int64_t RawBytes(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples) {
  int64_t bytes = 0;
  for (const auto& s : samples) {
    for (const auto& t : s.inputs()) bytes += t.raw_data().size();
  }
  return bytes;
}

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

// Bytes of the constants only bodies use: their own, and the main graph's
// initializers that only bodies read (from the outer scope).
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

// The terms of the estimate were fitted to the peak RSS of real jobs, each
// alone in a fresh quantd (bench/service/memory_bench, docs/service.md):
// ppocr cls/det/rec, openWakeWord, Silero VAD and MobileNetV2, 1 and 2
// compute threads; every prediction within 17% of the measured peak.
// - 8 MiB per job whatever its size (TPC, executors, thread arenas);
// - the model 9 times: parsed, prepared, the float and fake-quant executors'
//   weights (packed), the fake-quant weights, the QuantizedGraph's weight
//   integers, the QDQ export and the result's copies; an MCTQ export holds
//   the float weights twice more (its graph and its bytes);
// - constants inside If/Loop bodies 5 times instead: they stay float, so
//   nothing packs, quantizes or lowers them (parsed, prepared, two
//   executors' graphs, the export);
// - the samples twice: the request's parsed copy and the decoded feeds
//   (the report's feeds share the calibration feeds' buffers); the
//   per-sample histograms are counted with the activations
//   (HistogramBytes).
int64_t BaseEstimate(int64_t sample_bytes, int64_t model_bytes,
                     int64_t body_constant_bytes,
                     const v1::ExportOptions& export_options) {
  const int64_t model_copies =
      9 + (WantsExportFormat(export_options, v1::EXPORT_FORMAT_MCTQ) ? 2 : 0);
  const int64_t bodies =
      std::clamp<int64_t>(body_constant_bytes, 0, model_bytes);
  return sample_bytes * 2 + (model_bytes - bodies) * model_copies + bodies * 5 +
         (int64_t{8} << 20);
}

// Activations of the samples in flight. The first sample's run holds its
// live set (the most bytes alive at once): calibration's run once, the
// report's twice (its float and fake-quant sides run as one graph,
// paired_models.h, comparing at most four pairs at a time). Further samples
// in flight are at other points of their runs: 0.4x the sum of all
// activations each, but no more than 8x the live set (the report's two
// sides, and each thread's allocator arena keeping its own high-water mark):
// ppocr_rec's 440 activations sum to 192 MiB with 2.8 MiB alive at once,
// and a second sample adds 7-14 MiB, not 77 (memory_bench).
int64_t ActivationsInFlight(const ActivationSizes& per, int samples_in_flight,
                            int num_samples) {
  const int64_t in_flight = std::max<int64_t>(
      1,
      std::min<int64_t>({samples_in_flight, 1024, std::max(1, num_samples)}));
  constexpr int64_t kCap = int64_t{1} << 50;
  const int64_t total = std::min(kCap, per.total);
  const int64_t live = std::min(kCap, per.live);
  // At most 2^50 * (2 + 1023 * 2/5) < 2^60: no overflow.
  const int64_t further = std::min(total * 2 / 5, live * 8);
  return std::min(kCap, live * 2 + (in_flight - 1) * further);
}

// Calibration keeps one histogram (kHistogramBins counts, and a map node
// with the tensor's name) per histogrammed tensor and sample until it
// merges them after the last sample: 55 MiB for ppocr_rec's 16 samples,
// 2.8 MiB of samples.
int64_t HistogramBytes(const ActivationSizes& per, int num_samples) {
  constexpr int64_t kPerHistogram = quantizers::kHistogramBins * 4 + 192;
  const int64_t tensors = std::clamp<int64_t>(per.histogrammed, 0, 1 << 24);
  return tensors * std::clamp(num_samples, 1, 1 << 20) * kPerHistogram;
}

// Whether the `hessian` stage (HMSE weights) may run: asked for, or tried by
// the quality target's search when GPTQ runs.
bool MayComputeHessianScores(const v1::QuantizeRequest& request) {
  return request.gptq().enabled() &&
         (request.quantization().weights_error_method() ==
              v1::ERROR_METHOD_HMSE ||
          QualityTargetRequested(request));
}

// Whether shift-negative correction runs: PtqOptions' default unless the
// request sets it.
bool CorrectsShiftNegative(const v1::QuantizationConfig& q) {
  return q.has_shift_negative_activation_correction()
             ? q.shift_negative_activation_correction()
             : PtqOptions().shift_negative_activation_correction;
}

// The activations the job holds at its peak: calibration's samples in
// flight and histograms, the Hessian scores' tapes and estimates (the float
// weights counted as model_bytes / 4, EstimateHmseMemoryBytes) when HMSE may
// run, or the mixed-precision sensitivity's float cache, running tasks and
// the float runs that fill the cache (SensitivityMemoryBytes; for whole
// cones the tasks' 2x the sample always exceeds those runs) when it
// searches, whichever is larger (the
// stages run after calibration, which has released its own).
int64_t PeakActivations(const v1::QuantizeRequest& request,
                        const ActivationSizes& sizes, int samples_in_flight,
                        int num_samples, int64_t model_bytes) {
  const int64_t per_sample = sizes.total;
  int64_t calibration =
      ActivationsInFlight(sizes, samples_in_flight, num_samples) +
      HistogramBytes(sizes, num_samples);
  if (MayComputeHessianScores(request)) {
    calibration = std::max(calibration,
                           hessian::EstimateHmseMemoryBytes(
                               model_bytes / 4, per_sample, samples_in_flight));
  }
  const v1::MixedPrecisionConfig& mp = request.mixed_precision();
  if (!MixedPrecisionSearches(mp)) return calibration;
  // A weights target searches the kernels' bits alone; any other makes
  // nearly every node a cone's start, whose cache keeps nearly every
  // activation. Shift-negative correction (before the search) adds its
  // copies.
  const bool kernels_only = MixedPrecisionSearchesWeightsOnly(mp);
  const int64_t kept =
      (kernels_only ? sizes.sensitivity_kept : per_sample) +
      (CorrectsShiftNegative(request.quantization()) ? sizes.shift_negative
                                                     : 0);
  const int sensitivity_samples =
      MixedPrecisionSensitivitySamples(mp, num_samples);
  // A cut cone's task makes that cone's bytes, not the whole sample's.
  const int64_t cone_bytes = kernels_only && mp.sensitivity_depth() > 0
                                 ? std::min(per_sample, sizes.sensitivity_cone)
                                 : per_sample;
  return std::max(
      calibration,
      SensitivityMemoryBytes(
          kept, cone_bytes,
          ActivationsInFlight(sizes, samples_in_flight, sensitivity_samples),
          sensitivity_samples, std::max(1, samples_in_flight)));
}

// What calibration keeps for the report (KeepsFloatValuesForReport): every
// activation of the report's samples that fit the budget whole (the job
// starts keeping no more: KeepForReport in quantize_job.cc).
int64_t KeptForReport(const v1::QuantizeRequest& request, int64_t per_sample,
                      int64_t report_samples) {
  if (!KeepsFloatValuesForReport(request)) return 0;
  if (per_sample <= 0) return 0;  // no shapes: no activations counted
  const int64_t n = std::clamp<int64_t>(report_samples, 0, 1 << 20);
  return SamplesKeptWhole(per_sample, n) * per_sample;
}

// The activations at the job's peak: calibration and the decisions
// (PeakActivations) with the float values kept for the report, or GPTQ,
// which runs after them. Its passes hold the samples in flight (the
// histograms have merged, the Hessian stage's tapes are gone); the HMSE
// scores, a float a weight (model_bytes), stay with the job.
int64_t JobActivations(const v1::QuantizeRequest& request,
                       const ActivationSizes& sizes,
                       const GptqStageMemory& gptq, int samples_in_flight,
                       int num_samples, int64_t model_bytes,
                       int64_t kept_for_report) {
  const int64_t peak = PeakActivations(request, sizes, samples_in_flight,
                                       num_samples, model_bytes);
  if (!request.gptq().enabled()) return peak + kept_for_report;
  const int64_t passes =
      ActivationsInFlight(sizes, samples_in_flight, num_samples);
  const int64_t scores =
      MayComputeHessianScores(request) ? std::max<int64_t>(0, model_bytes) : 0;
  return std::max(peak + kept_for_report, gptq.PeakBytes(passes) + scores);
}

// GPTQ's stage when the request asks for it (EstimateGptqStageMemory), for
// `samples` samples of the shapes `model` holds (InferSampleShapes); its
// options were validated by ValidateQuantizeRequest (unresolvable ones count
// nothing: the job fails before the stage).
GptqStageMemory GptqStage(const v1::QuantizeRequest& request,
                          const Model& model, int64_t samples) {
  if (!request.gptq().enabled()) return {};
  auto options = ResolveGptqOptions(request.gptq());
  if (!options.ok()) return {};
  if (options->max_samples > 0) {
    samples = std::min<int64_t>(samples, options->max_samples);
  }
  return EstimateGptqStageMemory(model, *options, samples);
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
  if (!samples) {
    return absl::InvalidArgumentError(
        "calibration_samples: no samples (at least one is needed, or "
        "generated_calibration)");
  }
  return absl::OkStatus();
}

constexpr int64_t kMaxProbeElements = int64_t{1} << 24;

// One zero image of the shape the job will generate: the shapes that the
// activation estimate infers. Empty when the shape is not known.
std::vector<SampleFeeds> GeneratedShapeProbe(const v1::QuantizeRequest& request,
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
  // An untrusted model may declare any size: beyond 16M floats (64 MiB)
  // the estimate uses the declared shapes and the probe is not allocated.
  int64_t elements = 1;
  for (int64_t d : image) {
    if (d <= 0 || d > kMaxProbeElements / elements) return {};
    elements *= d;
  }
  return {SampleFeeds{{in.name, Tensor(DType::kFloat, image)}}};
}

// The generated images' raw bytes (count images of the probe's shape).
int64_t GeneratedSampleBytes(const v1::QuantizeRequest& request,
                             const std::vector<SampleFeeds>& probe) {
  if (probe.empty()) return 0;
  return request.generated_calibration().count() *
         static_cast<int64_t>(probe[0].begin()->second.byte_size());
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
  if (request.num_threads() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads: must be >= 0, got ", request.num_threads()));
  }
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
  return RejectUnsupported(request, options);
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
  input.sample_bytes =
      RawBytes(calibration_samples) + RawBytes(request.evaluation_samples());
  if (model_bytes.data() == request.onnx_model().data()) {
    input.request_payload_bytes += input.model_bytes;
  }
  if (&calibration_samples == &request.calibration_samples()) {
    input.request_payload_bytes += RawBytes(calibration_samples);
  }

  const int64_t max_bytes = limits.max_sample_bytes;
  if (generated) {
    // The generate stage fills calibration (and evaluation) later.
    const std::vector<SampleFeeds> probe =
        GeneratedShapeProbe(request, input.model);
    input.sample_bytes += GeneratedSampleBytes(request, probe);
    Model shaped = input.model;
    const bool inferred = InferSampleShapes(probe, &shaped);
    input.activations = ActivationBytesPerSample(
        shaped, inferred, probe, request.mixed_precision().sensitivity_depth());
    if (request.gptq().enabled()) {
      // The generated images' shapes are not counted: the declared ones.
      Model declared = input.model;
      InferSampleShapes({}, &declared);
      input.gptq_stage =
          GptqStage(request, declared, request.generated_calibration().count());
    }
    auto options = datagen::DataGenOptionsFromGeneratedCalibration(
        request.generated_calibration());
    if (!options.ok()) return options.status();
    input.generate_bytes =
        datagen::EstimateGenerateMemoryBytes(input.model, *options);
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
  input.gptq_stage = GptqStage(request, shaped,
                               static_cast<int64_t>(input.calibration.size()));
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

namespace {

// EstimateJobMemoryBytesBeforeImport with the bodies' constants known.
int64_t BeforeImport(const v1::QuantizeRequest& request,
                     int64_t body_constant_bytes) {
  // Generated images of a shape given in the request (else counted after
  // the import, from the model's input).
  int64_t generated = 0;
  const v1::GeneratedCalibration& g = request.generated_calibration();
  if (g.shape_size() >= 3) {
    // In double, capped: the request is untrusted.
    double bytes = 4.0 * static_cast<double>(std::max<int64_t>(0, g.count()));
    for (int i = g.shape_size() - 3; i < g.shape_size(); ++i) {
      bytes *= static_cast<double>(std::max<int64_t>(0, g.shape(i)));
    }
    generated = static_cast<int64_t>(
        std::min(bytes, static_cast<double>(int64_t{1} << 50)));
  }
  return BaseEstimate(RawBytes(request.calibration_samples()) +
                          RawBytes(request.evaluation_samples()) + generated,
                      static_cast<int64_t>(request.onnx_model().size()),
                      body_constant_bytes, request.export_options());
}

}  // namespace

// Before the import the bodies are unknown: every byte counts as a quantized
// model's (the larger estimate).
int64_t EstimateJobMemoryBytesBeforeImport(const v1::QuantizeRequest& request) {
  return BeforeImport(request, /*body_constant_bytes=*/0);
}

int64_t EstimateJobMemoryBytes(const JobInput& input, int samples_in_flight) {
  // Generated calibration: the count is known before the images are.
  const bool generated = input.request->has_generated_calibration();
  const int64_t count = generated
                            ? input.request->generated_calibration().count()
                            : static_cast<int64_t>(input.calibration.size());
  int64_t evaluated = static_cast<int64_t>(input.evaluation.size());
  if (generated && input.request->evaluation_samples_size() == 0) {
    const int n = ReportSampleCount(input.request->report_samples());
    evaluated = n < 0 ? count : std::min<int64_t>(n, count);
  }
  const int64_t activations = JobActivations(
      *input.request, input.activations, input.gptq_stage, samples_in_flight,
      static_cast<int>(std::min<int64_t>(count, 1 << 20)), input.model_bytes,
      KeptForReport(*input.request, input.activations.prepared, evaluated));
  // The generate stage runs before calibration: the larger of the two.
  // BaseEstimate counts the payload's bytes once more than the job holds
  // once the server has freed them (memory_bench: MobileNetV2's peak fell
  // by 77 MiB, its 37 MiB of samples and 13 MiB model).
  return BaseEstimate(input.sample_bytes, input.model_bytes,
                      input.body_constant_bytes,
                      input.request->export_options()) -
         input.request_payload_bytes +
         std::max(activations, input.generate_bytes);
}

int64_t EstimateJobMemoryBytes(const v1::QuantizeRequest& request,
                               const JobLimits& limits, int samples_in_flight) {
  ActivationSizes per_sample;
  int64_t body_constant_bytes = 0;
  GptqStageMemory gptq;
  const int report = ReportSampleCount(request.report_samples());
  const int calibration = request.calibration_samples_size();
  const int64_t model_size = static_cast<int64_t>(request.onnx_model().size());
  if (!request.onnx_model().empty()) {
    auto model = ImportOnnx(request.onnx_model(), ImportOptionsFor(limits));
    if (model.ok()) {
      // Only the first sample's shapes matter: decode that one.
      google::protobuf::RepeatedPtrField<v1::Sample> head;
      if (!request.calibration_samples().empty()) {
        *head.Add() = request.calibration_samples(0);
      }
      auto first =
          DecodeSamples(head, model->graph.inputs, "calibration_samples",
                        limits.max_sample_bytes);
      const std::vector<SampleFeeds> samples =
          first.ok() ? *std::move(first) : std::vector<SampleFeeds>();
      body_constant_bytes = BodyConstantBytes(model->graph);
      const bool inferred = InferSampleShapes(samples, &*model);
      per_sample = ActivationBytesPerSample(
          *model, inferred, samples,
          request.mixed_precision().sensitivity_depth());
      gptq = GptqStage(request, *model, calibration);
    }
  }
  // As the server runs it: the request's payload freed after the import.
  const int64_t payload = model_size + RawBytes(request.calibration_samples());
  return BeforeImport(request, body_constant_bytes) - payload +
         JobActivations(
             request, per_sample, gptq, samples_in_flight, calibration,
             model_size,
             KeptForReport(
                 request, per_sample.prepared,
                 report < 0 ? calibration : std::min(report, calibration)));
}

bool KeepsFloatValuesForReport(const v1::QuantizeRequest& request) {
  return request.evaluation_samples_size() == 0 && !request.gptq().enabled() &&
         !MixedPrecisionRequested(request.mixed_precision());
}

}  // namespace quantd
