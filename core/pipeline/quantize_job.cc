#include "core/pipeline/quantize_job.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "core/pipeline/activation_bias_correction.h"
#include "core/pipeline/bias_correction.h"
#include "core/pipeline/dynamic_shapes.h"
#include "core/pipeline/evaluation.h"
#include "core/pipeline/fake_quant.h"
#include "core/pipeline/gptq_options.h"
#include "core/pipeline/gptq_stage.h"
#include "core/pipeline/job_artifacts.h"
#include "core/pipeline/job_state.h"
#include "core/pipeline/mixed_precision_stage.h"
#include "core/pipeline/param_selection.h"
#include "core/pipeline/ptq_options.h"
#include "core/pipeline/qdq_lowering.h"
#include "core/pipeline/quantized_graph_builder.h"
#include "core/pipeline/resource_utilization.h"
#include "core/pipeline/samples.h"
#include "core/pipeline/stages.h"
#include "core/pipeline/statistics.h"
#include "core/qdq/mctq_export.h"
#include "core/qdq/qdq_export.h"
#include "core/report/report.h"
#include "core/runtime/monotonic_progress.h"
#include "core/tpc/framework_info.h"
#include "core/tpc/json_io.h"
#include "core/tpc/registry.h"
#include "core/tpc/tpc_ref.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Forwards to the caller's sink (if any) and timestamps stages.
class StageClock {
 public:
  using StageHook = std::function<absl::Status(const std::string&)>;
  StageClock(ProgressSink* sink, const CancellationToken* cancel,
             StageHook on_start)
      : sink_(sink), cancel_(cancel), on_start_(std::move(on_start)) {}

  absl::Status Begin(const std::string& stage, const std::string& message) {
    if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
    if (stage == stage_) {  // a new step of the same stage
      if (sink_ != nullptr) sink_->Report({stage, 0.5, message});
      return absl::OkStatus();
    }
    End();
    stage_ = stage;
    start_ = absl::Now();
    if (sink_ != nullptr) sink_->Report({stage, 0.0, message});
    if (on_start_) RETURN_IF_ERROR(on_start_(stage));
    return absl::OkStatus();
  }
  void End() {
    if (stage_.empty()) return;
    const double s = absl::ToDoubleSeconds(absl::Now() - start_);
    bool merged = false;
    for (auto& [name, t] : timings_) {
      if (name == stage_) {
        t += s;
        merged = true;
      }
    }
    if (!merged) timings_.emplace_back(stage_, s);
    if (sink_ != nullptr) sink_->Report({stage_, 1.0, "done"});
    stage_.clear();
  }
  void Warn(const std::string& message) {
    if (sink_ != nullptr) sink_->Warn(message);
  }
  ProgressSink* sink() const { return sink_; }
  const std::vector<std::pair<std::string, double>>& timings() const {
    return timings_;
  }

 private:
  ProgressSink* sink_;
  const CancellationToken* cancel_;
  StageHook on_start_;
  std::string stage_;
  absl::Time start_;
  std::vector<std::pair<std::string, double>> timings_;
};

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

struct ResolvedTpc {
  tpc::TpcPtr tpc;
  std::string ref;  // "name@version"
  std::string digest;
};

absl::StatusOr<ResolvedTpc> ResolveTpc(const v1::TpcRef& ref,
                                       const TpcRegistry& registry) {
  ResolvedTpc out;
  switch (ref.source_case()) {
    case v1::TpcRef::kName: {
      ASSIGN_OR_RETURN(tpc::RegistryEntry e, registry.ResolveEntry(ref.name()));
      out.tpc = e.tpc;
      out.ref = absl::StrCat(e.name, "@", e.version);
      out.digest = e.digest;
      return out;
    }
    case v1::TpcRef::kInlineTpc: {
      ASSIGN_OR_RETURN(out.tpc, registry.ResolveInline(ref.inline_tpc()));
      break;
    }
    case v1::TpcRef::kInlineJson: {
      auto parsed = tpc::TpcFromJson(ref.inline_json());
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tpc.inline_json: ", parsed.status().message()));
      }
      ASSIGN_OR_RETURN(out.tpc, registry.ResolveInline(*parsed));
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "tpc: no TPC given (set tpc.name, tpc.inline_tpc or "
          "tpc.inline_json)");
  }
  out.ref = absl::StrCat(out.tpc->name().empty() ? "inline" : out.tpc->name(),
                         "@", out.tpc->version());
  out.digest = tpc::TpcDigest(*out.tpc);
  return out;
}

// Input shapes to bind when every sample agrees (shape subgraphs then fold).
std::map<std::string, std::vector<int64_t>> CommonInputShapes(
    const std::vector<SampleFeeds>& a, const std::vector<SampleFeeds>& b) {
  std::map<std::string, std::vector<int64_t>> shapes;
  if (a.empty()) return shapes;
  for (const auto& [name, t] : a[0]) shapes[name] = t.shape();
  for (const auto* list : {&a, &b}) {
    for (const SampleFeeds& s : *list) {
      for (const auto& [name, t] : s) {
        if (shapes[name] != t.shape()) return {};
      }
    }
  }
  return shapes;
}

std::string MethodName(v1::QuantizationMethod m) {
  std::string s = v1::QuantizationMethod_Name(m);
  const std::string prefix = "QUANTIZATION_METHOD_";
  if (s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
  return s;
}

// Bytes of every activation of one sample: the model parsed with the limits
// and its shapes inferred for the first calibration sample's input shapes.
// Tensors whose shape stays unknown count as the largest input. 0 when the
// model does not parse (the job then fails at import).
int64_t ActivationBytesPerSample(const v1::QuantizeRequest& request,
                                 const JobLimits& limits) {
  if (request.onnx_model().empty()) return 0;
  ImportOptions import_options;
  import_options.max_nodes = limits.max_nodes;
  import_options.max_tensor_bytes = std::min<int64_t>(
      import_options.max_tensor_bytes, limits.max_tensor_elements * 8);
  import_options.max_model_bytes = limits.max_model_bytes;
  auto model = ImportOnnx(request.onnx_model(), import_options);
  if (!model.ok()) return 0;
  ShapeInferenceOptions shape_options;
  int64_t largest_input = 0;
  if (request.calibration_samples_size() > 0) {
    const auto& inputs = request.calibration_samples(0).inputs();
    for (const v1::Tensor& t : inputs) {
      std::string name = t.name();
      if (name.empty() && inputs.size() == 1 &&
          model->graph.inputs.size() == 1) {
        name = model->graph.inputs[0].name;
      }
      shape_options.input_shapes[name] = {t.dims().begin(), t.dims().end()};
      largest_input = std::max<int64_t>(largest_input, t.raw_data().size());
    }
  }
  if (!InferShapes(&*model, shape_options).ok()) {
    shape_options.input_shapes.clear();  // fall back to the declared shapes
    if (!InferShapes(&*model, shape_options).ok()) return 0;
  }
  const Graph& g = model->graph;
  // Saturates: a bound above any budget is as good as the exact figure.
  constexpr int64_t kCap = int64_t{1} << 50;
  int64_t total = 0;
  for (const auto& [name, info] : g.value_info) {
    if (g.IsConstant(name)) continue;
    int64_t bytes = largest_input;
    bool known = info.has_shape;
    int64_t n = 1;
    for (int64_t d : info.shape) {
      if (d < 0) {
        known = false;
        break;
      }
      n = (d > 0 && n > kCap / d) ? kCap : n * d;
    }
    if (known) {
      const int64_t size = static_cast<int64_t>(DTypeSize(info.dtype));
      bytes = std::min(kCap, n) * (size > 0 ? size : 4);
    }
    total = std::min(kCap, total + bytes);
  }
  return total;
}

// An empty format list means QDQ only.
bool WantsFormat(const v1::ExportOptions& options, v1::ExportFormat format) {
  if (options.formats().empty()) return format == v1::EXPORT_FORMAT_QDQ;
  for (int f : options.formats()) {
    if (f == format) return true;
  }
  return false;
}

absl::Status ValidateExportOptions(const v1::ExportOptions& options) {
  for (int i = 0; i < options.formats_size(); ++i) {
    const int f = options.formats(i);
    if (f != v1::EXPORT_FORMAT_QDQ && f != v1::EXPORT_FORMAT_MCTQ) {
      return absl::InvalidArgumentError(
          absl::StrCat("export_options.formats[", i, "]: ", f,
                       " is not a format (EXPORT_FORMAT_QDQ or "
                       "EXPORT_FORMAT_MCTQ)"));
    }
  }
  return absl::OkStatus();
}

// The MCTQ model as MCT 2.3 exports it: opset 15 (or the model's, if
// higher), the TPC's metadata when it asks for it, and the float model's
// declared (dynamic) inputs and outputs as for QDQ.
absl::StatusOr<std::string> ExportMctq(
    const Model& prepared, const v1::QuantizedGraph& qg,
    const v1::TargetPlatformCapabilities& tpc,
    const std::vector<ValueInfo>& declared_inputs,
    const std::vector<ValueInfo>& declared_outputs,
    std::vector<std::string>* warnings) {
  Model model = prepared;
  if (model.DefaultOpset() < kMctqDefaultOpset) {
    RETURN_IF_ERROR(UpgradeForQdq(kMctqDefaultOpset, &model));
  }
  MctqExportOptions options;
  options.insert_preserving_quantizers = tpc.insert_preserving_quantizers();
  options.metadata = MctqMetadata(tpc);
  ASSIGN_OR_RETURN(Model mctq, BuildMctqModel(model, qg, options));
  RestoreDeclaredShapes(declared_inputs, declared_outputs, &mctq, warnings);
  return ExportOnnx(mctq);
}

}  // namespace

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
  if (request.calibration_samples_size() == 0 &&
      request.samples_ref().empty()) {
    return absl::InvalidArgumentError(
        "calibration_samples: no samples (at least one is needed)");
  }
  RETURN_IF_ERROR(
      ValidateSampleProtos(request.calibration_samples(), "calibration_samples",
                           limits.max_samples, limits.max_sample_bytes));
  RETURN_IF_ERROR(ValidateSampleProtos(request.evaluation_samples(),
                                       "evaluation_samples", limits.max_samples,
                                       limits.max_sample_bytes));
  switch (request.tpc().source_case()) {
    case v1::TpcRef::kName: {
      auto ref = tpc::ParseTpcRef(request.tpc().name());
      if (!ref.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tpc.name: ", ref.status().message()));
      }
      break;
    }
    case v1::TpcRef::SOURCE_NOT_SET:
      return absl::InvalidArgumentError(
          "tpc: no TPC given (set tpc.name, tpc.inline_tpc or "
          "tpc.inline_json)");
    default:
      break;
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
  RETURN_IF_ERROR(ValidateExportOptions(request.export_options()));
  auto options =
      ResolvePtqOptions(request.quantization(), request.gptq().enabled());
  if (!options.ok()) return options.status();
  return RejectUnsupported(request, *options);
}

int64_t EstimateJobMemoryBytesBeforeImport(const v1::QuantizeRequest& request) {
  int64_t samples = 0;
  for (const auto& s : request.calibration_samples()) {
    for (const auto& t : s.inputs()) samples += t.raw_data().size();
  }
  for (const auto& s : request.evaluation_samples()) {
    for (const auto& t : s.inputs()) samples += t.raw_data().size();
  }
  const int64_t model = static_cast<int64_t>(request.onnx_model().size());
  // Parsed model, prepared copy, fake-quant copy and QDQ export each hold
  // the weights; an MCTQ export holds them twice more (its graph and its
  // bytes, float weights).
  const int64_t model_copies =
      5 +
      (WantsFormat(request.export_options(), v1::EXPORT_FORMAT_MCTQ) ? 2 : 0);
  return samples * 2 + model * model_copies + (int64_t{64} << 20);
}

int64_t EstimateJobMemoryBytes(const v1::QuantizeRequest& request,
                               const JobLimits& limits, int samples_in_flight) {
  // Per sample in flight, evaluation keeps a float copy of every quantized
  // activation while the fake-quant run makes its own: at most twice the sum
  // of all activations.
  const int64_t in_flight = std::max<int64_t>(
      1, std::min<int64_t>({samples_in_flight, 1024,
                            std::max(1, request.calibration_samples_size())}));
  const int64_t activations =
      std::min(int64_t{1} << 50,
               2 * in_flight * ActivationBytesPerSample(request, limits));
  return EstimateJobMemoryBytesBeforeImport(request) + activations;
}

absl::StatusOr<v1::QuantizeResult> RunQuantizeJob(
    const v1::QuantizeRequest& request, const JobContext& context) {
  return RunQuantizeJobWithArtifacts(request, context, nullptr);
}

absl::StatusOr<v1::QuantizeResult> RunQuantizeJobWithArtifacts(
    const v1::QuantizeRequest& request, const JobContext& context,
    JobArtifacts* artifacts) {
  if (context.registry == nullptr) {
    return absl::InternalError("JobContext.registry is required");
  }
  RETURN_IF_ERROR(ValidateQuantizeRequest(request, context.limits));
  if (request.onnx_model().empty()) {
    return absl::FailedPreconditionError(
        "model_ref: uploaded models must be resolved to onnx_model by the "
        "server before the job runs");
  }
  if (request.calibration_samples_size() == 0) {
    return absl::FailedPreconditionError(
        "samples_ref: uploaded samples must be resolved by the server before "
        "the job runs");
  }
  ThreadPool* pool = context.pool;
  const CancellationToken* cancel = context.cancel;
  // Stages report from several threads; clients must never see a stage's
  // fraction go back.
  MonotonicProgressSink progress(context.progress);
  StageClock clock(context.progress != nullptr ? &progress : nullptr, cancel,
                   context.on_stage_start);
  JobState state;
  ASSIGN_OR_RETURN(state.options, ResolvePtqOptions(request.quantization(),
                                                    request.gptq().enabled()));

  // 1. TPC.
  RETURN_IF_ERROR(clock.Begin("import", "resolving the TPC"));
  ASSIGN_OR_RETURN(ResolvedTpc tpc,
                   ResolveTpc(request.tpc(), *context.registry));

  // 2. Import.
  RETURN_IF_ERROR(clock.Begin("import", "parsing the ONNX model"));
  ImportOptions import_options;
  import_options.max_nodes = context.limits.max_nodes;
  import_options.max_tensor_bytes = std::min<int64_t>(
      import_options.max_tensor_bytes, context.limits.max_tensor_elements * 8);
  import_options.max_model_bytes = context.limits.max_model_bytes;
  auto imported = ImportOnnx(request.onnx_model(), import_options);
  if (!imported.ok()) {
    return absl::Status(
        imported.status().code(),
        absl::StrCat("onnx_model: ", imported.status().message()));
  }
  state.model = *std::move(imported);
  const int64_t sample_bytes = context.limits.max_sample_bytes;
  ASSIGN_OR_RETURN(
      std::vector<SampleFeeds> calibration,
      DecodeSamples(request.calibration_samples(), state.model.graph.inputs,
                    "calibration_samples", sample_bytes));
  if (state.options.max_calibration_samples > 0 &&
      static_cast<int>(calibration.size()) >
          state.options.max_calibration_samples) {
    calibration.resize(state.options.max_calibration_samples);
  }
  std::vector<SampleFeeds> evaluation;
  if (request.evaluation_samples_size() > 0) {
    ASSIGN_OR_RETURN(
        evaluation,
        DecodeSamples(request.evaluation_samples(), state.model.graph.inputs,
                      "evaluation_samples", sample_bytes));
  } else {
    evaluation = calibration;
  }

  // 3. Graph preparation. The declared inputs and outputs go back into the
  // exported model (dynamic_shapes.h).
  RETURN_IF_ERROR(clock.Begin("prepare", "preparing the graph"));
  const std::vector<ValueInfo> declared_inputs = state.model.graph.inputs;
  const std::vector<ValueInfo> declared_outputs = state.model.graph.outputs;
  RETURN_IF_ERROR(PrepareGraph(state.options,
                               CommonInputShapes(calibration, evaluation),
                               &state.model, &state.warnings));
  RETURN_IF_ERROR(AttachTpc(tpc.tpc, request.quantization(),
                            request.mixed_precision().kernel_weights_bits(),
                            &state));

  // 4. Statistics.
  RETURN_IF_ERROR(clock.Begin("calibrate", "collecting statistics"));
  auto float_model = std::make_shared<const Model>(state.model);
  ExecutorOptions exec_options;
  exec_options.pool = pool;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> float_exec,
                   Executor::Create(float_model, exec_options));
  StatisticsRequest stats_request;
  const Graph& g = state.model.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodePlan& p = state.plans[i];
    if (p.quantize_activation && !p.preserving && !g.nodes[i].outputs.empty()) {
      for (const std::string& out : g.nodes[i].outputs) {
        if (!out.empty()) stats_request.histogram_tensors.insert(out);
      }
    }
    if (state.options.weights_bias_correction &&
        SupportsBiasCorrection(g.nodes[i])) {
      for (const WeightSlot& w : p.weights) {
        if (w.input_index == 1 && w.config.enable_weights_quantization()) {
          stats_request.mean_tensors[g.nodes[i].Input(0)] = 1;
        }
      }
    }
  }
  if (state.input_config.has_value()) {
    for (const auto& in : g.inputs) {
      if (in.dtype == DType::kFloat) {
        stats_request.histogram_tensors.insert(in.name);
      }
    }
  }
  ASSIGN_OR_RETURN(StatisticsResult stats,
                   CollectStatistics(*float_exec, calibration, stats_request,
                                     pool, cancel, clock.sink()));
  state.stats = std::move(stats.stats);
  state.input_means = std::move(stats.means);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = state.plans[i];
    if (!p.quantize_activation || g.nodes[i].outputs.empty()) continue;
    const std::string& out = g.nodes[i].outputs[0];
    if (stats.non_float.count(out) ||
        (!p.preserving && !state.stats.count(out) &&
         !(p.known_min && p.known_max))) {
      p.quantize_activation = false;
      p.preserving = false;
      p.float_reason = "output is not a float tensor";
    }
  }

  // 5. Parameter selection.
  RETURN_IF_ERROR(clock.Begin("select", "selecting quantization parameters"));
  RETURN_IF_ERROR(SelectAllParams(&state, pool, cancel, clock.sink()));

  // 5b. Mixed precision: the chosen candidate per node, re-selected.
  MixedPrecisionOutcome mixed_precision;
  if (MixedPrecisionRequested(request.mixed_precision())) {
    RETURN_IF_ERROR(
        clock.Begin("mixed_precision", "searching the bit allocation"));
    ASSIGN_OR_RETURN(
        mixed_precision,
        RunMixedPrecision(request.mixed_precision(), kMpSimdPadding,
                          stats.shapes, calibration, &state, pool, cancel,
                          clock.sink()));
  }

  // 6. Corrections.
  RETURN_IF_ERROR(clock.Begin("correct", "shift-negative and bias correction"));
  if (state.options.softmax_shift) RETURN_IF_ERROR(ApplySoftmaxShift(&state));
  if (state.options.concat_threshold_update) {
    RETURN_IF_ERROR(ApplyConcatThresholdUpdate(&state));
  }
  if (state.options.shift_negative_activation_correction) {
    RETURN_IF_ERROR(ApplyShiftNegativeCorrection(&state));
  }
  if (state.options.weights_bias_correction) {
    RETURN_IF_ERROR(ApplyBiasCorrection(&state));
  }
  if (state.options.activation_bias_correction) {
    RETURN_IF_ERROR(ApplyActivationBiasCorrection(&state));
  }

  // 6b. GPTQ (float_exec: the float targets, before the corrections).
  if (request.gptq().enabled()) {
    RETURN_IF_ERROR(clock.Begin("gptq", "gradient-based rounding"));
    ASSIGN_OR_RETURN(GptqOptions gptq, ResolveGptqOptions(request.gptq()));
    RETURN_IF_ERROR(RunGptq(gptq, *float_exec, calibration,
                            request.export_options(), &state, pool, cancel,
                            clock.sink()));
  }

  // 7. Export.
  RETURN_IF_ERROR(clock.Begin("export", "building the quantized graph"));
  v1::QuantizeResult result;
  v1::QuantizedGraph qg = BuildQuantizedGraph(state, tpc.ref, tpc.digest);
  AddMixedPrecisionResults(mixed_precision, &qg);
  ASSIGN_OR_RETURN(QdqPlan plan,
                   LowerToQdqPlan(state.model, qg, request.export_options()));
  if (WantsFormat(request.export_options(), v1::EXPORT_FORMAT_QDQ) &&
      !request.export_options().skip_qdq_onnx()) {
    Model export_model = state.model;
    const int64_t need = RequiredQdqOpset(plan);
    if (export_model.DefaultOpset() < need) {
      RETURN_IF_ERROR(UpgradeForQdq(need, &export_model));
    }
    ASSIGN_OR_RETURN(Model qdq, BuildQdqModel(export_model, plan));
    RestoreDeclaredShapes(declared_inputs, declared_outputs, &qdq,
                          &state.warnings);
    ASSIGN_OR_RETURN(std::string bytes, ExportOnnx(qdq));
    result.set_qdq_onnx(std::move(bytes));
  }
  if (WantsFormat(request.export_options(), v1::EXPORT_FORMAT_MCTQ)) {
    RETURN_IF_ERROR(clock.Begin("export", "writing the MCTQ model"));
    ASSIGN_OR_RETURN(std::string bytes,
                     ExportMctq(state.model, qg, *tpc.tpc, declared_inputs,
                                declared_outputs, &state.warnings));
    result.set_mctq_onnx(std::move(bytes));
  }

  // 8. Report: error figures on the evaluation samples.
  RETURN_IF_ERROR(clock.Begin("report", "evaluating against float"));
  ASSIGN_OR_RETURN(Model fq_model, WithFakeQuantWeights(state.model, plan));
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> fq_exec,
                   Executor::Create(std::move(fq_model), exec_options));
  // float_exec still runs the snapshot taken before bias correction: the
  // reference is the float model, the corrected biases belong to the
  // quantized one.
  ActivationFakeQuantizer quantizer(plan);
  std::set<std::string> tensors;
  for (const auto& n : qg.nodes()) {
    if (!n.outputs().empty()) tensors.insert(n.outputs(0));
  }
  ASSIGN_OR_RETURN(
      EvaluationResult eval,
      EvaluateFakeQuant(*float_exec, *fq_exec, quantizer, evaluation, tensors,
                        pool, cancel, clock.sink()));
  ReportData report;
  report.model_name = g.name;
  report.tpc = tpc.ref;
  report.tpc_digest = tpc.digest;
  report.num_calibration_samples = static_cast<int>(calibration.size());
  report.num_evaluation_samples = static_cast<int>(evaluation.size());
  for (v1::QuantizedNode& n : *qg.mutable_nodes()) {
    LayerReport l;
    l.node = n.name();
    l.op_type = n.op_type();
    l.op_set = n.op_set();
    l.fused_group = n.fused_group();
    l.weights_bits = n.weights_bits();
    l.activation_bits = n.activation_bits();
    for (const auto& w : n.weights()) {
      if (w.attr() == "kernel_attr" || l.weights_method.empty()) {
        l.weights_method = MethodName(w.method());
      }
    }
    if (n.activations_size() > 0) {
      l.activation_method = MethodName(n.activations(0).method());
    }
    if (!n.outputs().empty()) {
      auto it = eval.tensor_sqnr_db.find(n.outputs(0));
      if (it != eval.tensor_sqnr_db.end()) {
        l.sqnr_db = it->second;
        n.set_sqnr_db(std::isfinite(it->second) ? it->second : 0.0);
      }
    }
    l.float_reason = n.float_reason();
    for (const GptqLayerError& e : state.gptq_layers) {
      if (e.node != n.name()) continue;
      l.gptq_sqnr_before_db = e.sqnr_before_db;
      l.gptq_sqnr_after_db = e.sqnr_after_db;
      l.gptq_applied = e.applied;
    }
    report.layers.push_back(std::move(l));
  }
  report.outputs = eval.outputs;
  report.output_sqnr_db = eval.output_sqnr_db;
  report.resource_utilization = ComputeResourceUtilization(
      state.model, qg, stats.shapes, 0, kMpSimdPadding);
  report.baseline_8bit = ComputeResourceUtilization(
      state.model, qg, stats.shapes, 8, kMpSimdPadding);
  report.targets = mixed_precision.targets;
  report.warnings = state.warnings;
  clock.End();
  report.timings_seconds = clock.timings();

  *result.mutable_quantized_graph() = std::move(qg);
  result.set_report_json(ReportToJson(report));
  result.set_report_html(ReportToHtml(report));
  *result.mutable_resource_utilization() = ToProto(report.resource_utilization);
  *result.mutable_baseline_8bit() = ToProto(report.baseline_8bit);
  *result.mutable_targets() = ToProto(report.targets);
  result.set_output_sqnr_db(report.output_sqnr_db &&
                                    std::isfinite(*report.output_sqnr_db)
                                ? *report.output_sqnr_db
                                : 0.0);
  result.set_tpc(tpc.ref);
  result.set_tpc_digest(tpc.digest);
  if (artifacts != nullptr) {
    artifacts->prepared_model = std::move(state.model);
    artifacts->plan = std::move(plan);
  }
  return result;
}

}  // namespace quantd
