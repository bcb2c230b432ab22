#include "core/pipeline/job/quantize_job.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "core/pipeline/corrections/bias_correction.h"
#include "core/pipeline/corrections/corrections.h"
#include "core/pipeline/evaluation/evaluation.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/pipeline/export/float_weight_guard.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/gptq/gptq_stage.h"
#include "core/pipeline/job/generate_stage.h"
#include "core/pipeline/job/job_artifacts.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/ptq_options.h"
#include "core/pipeline/job/report_stage.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/prep/attach.h"
#include "core/pipeline/prep/data_channel_equalization.h"
#include "core/pipeline/prep/dynamic_shapes.h"
#include "core/pipeline/prep/graph_prep.h"
#include "core/pipeline/ptq/channel_ranges.h"
#include "core/pipeline/ptq/hessian_scores.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/pipeline/ptq/statistics.h"
#include "core/pipeline/quality_target/quality_target.h"
#include "core/pipeline/quality_target/target_gptq_trial.h"
#include "core/qdq/mctq_export.h"
#include "core/qdq/qdq_export.h"
#include "core/runtime/monotonic_progress.h"
#include "core/runtime/stage_names.h"
#include "core/tpc/registry.h"
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
    // A cancel while the last stage ended (its "done" report) stops the job
    // here, before the next stage is announced.
    if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
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
  // Between the steps of a stage that has no loop of its own to poll in
  // (export, the report's set-up).
  absl::Status Check() const {
    return cancel_ != nullptr ? cancel_->Check() : absl::OkStatus();
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

// The MCTQ model as MCT 2.3 exports it: opset 15 (or the model's, if
// higher), the TPC's metadata when it asks for it, and the float model's
// declared (dynamic) inputs and outputs as for QDQ.
absl::StatusOr<std::string> ExportMctq(
    const Model& prepared, const ModelQuantization& quantization,
    const v1::TargetPlatformCapabilities& tpc, const Model& float_model,
    std::vector<std::string>* warnings) {
  Model model = prepared;
  if (model.DefaultOpset() < kMctqDefaultOpset) {
    RETURN_IF_ERROR(UpgradeForQdq(kMctqDefaultOpset, &model));
  }
  MctqExportOptions options;
  options.insert_preserving_quantizers = tpc.insert_preserving_quantizers();
  options.metadata = MctqMetadata(tpc);
  ASSIGN_OR_RETURN(Model mctq, BuildMctqModel(model, quantization, options));
  RestoreDeclaredShapes(float_model.graph.inputs, float_model.graph.outputs,
                        &mctq, warnings, &float_model);
  return ExportOnnx(mctq);
}

// The preflight under the "import" stage, with what the caller resolved.
absl::StatusOr<JobInput> Preflight(const v1::QuantizeRequest& request,
                                   const JobContext& context,
                                   StageClock& clock) {
  const PreflightSources& sources = context.sources;
  RETURN_IF_ERROR(clock.Begin(stage::kImport, "resolving the TPC"));
  ResolvedTpc tpc;
  JobSpec spec;
  if (sources.tpc != nullptr && sources.spec != nullptr) {
    tpc = *sources.tpc;
    spec = *sources.spec;
  } else {
    if (context.registry == nullptr) {
      return absl::InternalError("JobContext.registry is required");
    }
    ASSIGN_OR_RETURN(spec, ValidateQuantizeRequest(request, context.limits));
    ASSIGN_OR_RETURN(tpc, ResolveTpc(request.tpc(), *context.registry));
  }
  const absl::string_view model_bytes =
      sources.model_bytes.empty() ? request.onnx_model() : sources.model_bytes;
  const auto& samples = sources.calibration_samples != nullptr
                            ? *sources.calibration_samples
                            : request.calibration_samples();
  RETURN_IF_ERROR(clock.Begin(stage::kImport, "parsing the ONNX model"));
  ASSIGN_OR_RETURN(JobInput input,
                   PreflightJob(request, std::move(spec), model_bytes, samples,
                                std::move(tpc), context.limits));
  if (context.on_preflight) RETURN_IF_ERROR(context.on_preflight(input));
  return input;
}

// Which tensors calibration observes: quantized activations (histograms),
// inputs of bias-corrected layers (means), float graph inputs when the
// TPC quantizes inputs.
StatisticsRequest StatisticsRequestFor(const JobState& state) {
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
  return stats_request;
}

// The report evaluates on the first calibration samples unless evaluation
// samples were sent: calibration keeps their float values (every node
// output of the float model), within a budget (KeepsFloatValuesForReport).
KeepFloatValuesRequest KeepForReport(const Model& float_model,
                                     const JobInput& input) {
  KeepFloatValuesRequest keep;
  if (!KeepsFloatValuesForReport(input.spec, input.evaluation_samples_sent)) {
    return keep;
  }
  // Preflight's count of the prepared model's activations decides.
  keep.samples =
      SamplesKeptWhole(input.activations.prepared,
                       static_cast<int64_t>(input.evaluation.size()));
  keep.budget_bytes = kKeptFloatValuesBudgetBytes;
  for (const Node& n : float_model.graph.nodes) {
    keep.tensors.insert(n.outputs.begin(), n.outputs.end());
  }
  return keep;
}

// Statistics into the job state; activations that turned out not to be
// float (or never ran) stay float.
absl::StatusOr<StatisticsResult> Calibrate(
    const Executor& float_exec, const std::vector<SampleFeeds>& calibration,
    const KeepFloatValuesRequest& keep, JobState* state, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* sink) {
  StatisticsRequest stats_request = StatisticsRequestFor(*state);
  stats_request.keep = keep;
  ASSIGN_OR_RETURN(StatisticsResult stats,
                   CollectStatistics(float_exec, calibration, stats_request,
                                     pool, cancel, sink));
  state->stats = std::move(stats.stats);
  state->input_means = std::move(stats.means);
  const Graph& g = state->model.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = state->plans[i];
    if (!p.quantize_activation || g.nodes[i].outputs.empty()) continue;
    const std::string& out = g.nodes[i].outputs[0];
    if (stats.non_float.count(out) ||
        (!p.preserving && !state->stats.count(out) &&
         !(p.known_min && p.known_max))) {
      p.quantize_activation = false;
      p.preserving = false;
      p.float_reason = "output is not a float tensor";
    }
  }
  return stats;
}

// The QDQ and MCTQ models the request asks for, into `result`. The declared
// inputs and outputs go back into each (dynamic_shapes.h).
absl::Status ExportModels(const ExportOptions& options, const ResolvedTpc& tpc,
                          const QdqPlan& plan, const Model& float_model,
                          JobState* state, StageClock& clock,
                          v1::QuantizeResult* result) {
  if (options.qdq) {
    Model export_model = state->model;
    const int64_t need = RequiredQdqOpset(plan);
    if (export_model.DefaultOpset() < need) {
      RETURN_IF_ERROR(UpgradeForQdq(need, &export_model));
    }
    RETURN_IF_ERROR(clock.Check());
    ASSIGN_OR_RETURN(Model qdq, BuildQdqModel(export_model, plan));
    RestoreDeclaredShapes(float_model.graph.inputs, float_model.graph.outputs,
                          &qdq, &state->warnings, &float_model);
    RETURN_IF_ERROR(clock.Check());
    ASSIGN_OR_RETURN(std::string bytes, ExportOnnx(qdq));
    result->set_qdq_onnx(std::move(bytes));
  }
  if (options.mctq) {
    RETURN_IF_ERROR(clock.Begin(stage::kExport, "writing the MCTQ model"));
    ASSIGN_OR_RETURN(std::string bytes,
                     ExportMctq(state->model, QuantizationOf(*state), *tpc.tpc,
                                float_model, &state->warnings));
    result->set_mctq_onnx(std::move(bytes));
  }
  return absl::OkStatus();
}

// Without GPTQ to come, a target out of reach fails once the search (and
// its channel-equalization trial) is over, unless best effort was asked for
// (the final check then warns).
absl::Status CheckTargetBeforeGptq(
    const JobSpec& spec, const std::string& tpc,
    const std::optional<QualityTargetOutcome>& t) {
  if (!t.has_value() || t->report.met || spec.gptq_enabled ||
      spec.target->best_effort) {
    return absl::OkStatus();
  }
  return TargetOutOfReachError(*spec.target, tpc, t->best_figure,
                               t->best_description,
                               t->report.baseline.value_or(0.0));
}

// data_channel_equalization: one float pass for the channel ranges of the
// prepared graph's sites, then their scales.
absl::Status EqualizeChannelsFromData(const std::vector<SampleFeeds>& samples,
                                      const JobContext& context,
                                      ProgressSink* sink, JobState* state) {
  std::map<std::string, int64_t> sites;
  for (const EqualizationSite& s : FindEqualizationSites(state->model)) {
    sites[s.tensor] = s.channels;
  }
  if (sites.empty()) return absl::OkStatus();
  ExecutorOptions options;
  options.pool = context.pool;
  ASSIGN_OR_RETURN(
      std::unique_ptr<Executor> exec,
      Executor::Create(std::make_shared<const Model>(state->model), options));
  ASSIGN_OR_RETURN(auto ranges,
                   CollectChannelRanges(*exec, samples, sites, context.pool,
                                        context.cancel, sink));
  std::map<std::string, std::vector<double>> scales;
  for (const auto& [tensor, max] : ranges) {
    scales[tensor] =
        EqualizationScales(max, state->options.data_channel_equalization_alpha,
                           state->options.data_channel_equalization_max_scale);
  }
  ASSIGN_OR_RETURN(int n, ApplyChannelEqualization(scales, &state->model));
  state->warnings.push_back(absl::StrCat(
      n, " of ", sites.size(),
      " convolution input(s) channel-equalized from the calibration ranges "
      "(data_channel_equalization)"));
  return absl::OkStatus();
}

// What the stages after calibration read: the float model as calibrated
// (the reference of GPTQ and of the report, before the corrections) and the
// statistics (shapes and kept float runs included).
struct Calibration {
  ExecutorOptions exec_options;
  std::unique_ptr<Executor> float_exec;
  StatisticsResult stats;
};

// The `prepare` and `calibrate` stages: the graph prepared and bound to the
// samples' shapes, the TPC's plans attached, the statistics collected.
absl::StatusOr<Calibration> PrepareAndCalibrate(const JobInput& input,
                                                const JobContext& context,
                                                StageClock& clock,
                                                JobState* state) {
  RETURN_IF_ERROR(clock.Begin(stage::kPrepare, "preparing the graph"));
  RETURN_IF_ERROR(PrepareGraph(
      state->options, CommonInputShapes(input.calibration, input.evaluation),
      &state->model, &state->warnings));
  if (state->options.data_channel_equalization) {
    RETURN_IF_ERROR(EqualizeChannelsFromData(input.calibration, context,
                                             clock.sink(), state));
  }
  RETURN_IF_ERROR(AttachTpc(input.tpc.tpc, input.spec.attach, state));
  RETURN_IF_ERROR(clock.Begin(stage::kCalibrate, "collecting statistics"));
  Calibration cal;
  cal.exec_options.pool = context.pool;
  ASSIGN_OR_RETURN(cal.float_exec,
                   Executor::Create(std::make_shared<const Model>(state->model),
                                    cal.exec_options));
  ASSIGN_OR_RETURN(cal.stats,
                   Calibrate(*cal.float_exec, input.calibration,
                             KeepForReport(state->model, input), state,
                             context.pool, context.cancel, clock.sink()));
  // HMSE weights: Hessian scores of the kernels (ptq/hessian_scores.h).
  if (NeedsHessianScores(state->options)) {
    RETURN_IF_ERROR(clock.Begin(stage::kHessian, "estimating Hessian scores"));
    ASSIGN_OR_RETURN(
        state->options.hessian_scores,
        ComputeHessianScores(*state, input.calibration, context.pool,
                             context.cancel, clock.sink()));
  }
  return cal;
}

// The job reaches `stage` (JobContext.on_memory_stage).
absl::Status ReachMemoryStage(const JobContext& context, JobMemoryStage stage) {
  return context.on_memory_stage ? context.on_memory_stage(stage)
                                 : absl::OkStatus();
}

// What the quality target's search and trials read of the job.
QualityTargetInputs TargetInputs(
    const JobInput& input, const JobContext& context, Calibration* cal,
    const std::vector<std::string>* reuse_options = nullptr) {
  QualityTargetInputs in{&input.spec,        cal->float_exec.get(),
                         &input.evaluation,  &input.calibration,
                         &cal->stats.shapes, input.activations.total,
                         reuse_options};
  in.reach_memory_stage = [&context](JobMemoryStage stage) {
    return ReachMemoryStage(context, stage);
  };
  return in;
}

// What the decisions leave for the report.
struct Decisions {
  MixedPrecisionOutcome mixed_precision;
  std::optional<QualityTargetOutcome> target;
};

// The decisions, in MCT 2.3's order: parameter selection, shift-negative
// correction (its Add/Pad outputs are then searched and priced), mixed
// precision, then the quality target's trials or the corrections, and GPTQ.
// `reuse_options`: a previous target search's kept options (the
// equalization trial), which the search applies at once; `reuse_sensitivity`
// its mixed-precision sensitivities, which the search takes instead of
// measuring them again (RunMixedPrecision).
absl::StatusOr<Decisions> Decide(
    const JobInput& input, const JobContext& context, StageClock& clock,
    Calibration* cal, JobState* state,
    const std::vector<std::string>* reuse_options = nullptr,
    const MixedPrecisionSensitivity* reuse_sensitivity = nullptr) {
  const JobSpec& spec = input.spec;
  ThreadPool* pool = context.pool;
  const CancellationToken* cancel = context.cancel;
  // The quality-target search re-selects from here.
  const bool has_target = spec.target.has_value();
  std::optional<JobState> calibrated;
  WeightSelectionCache selected_weights;
  if (has_target) calibrated = *state;
  RETURN_IF_ERROR(
      clock.Begin(stage::kSelect, "selecting quantization parameters"));
  RETURN_IF_ERROR(SelectAllParams(state, pool, cancel, clock.sink(),
                                  has_target ? &selected_weights : nullptr));
  if (ShiftNegativeEnabled(state->options)) {
    RETURN_IF_ERROR(clock.Begin(stage::kSelect, "shift-negative correction"));
    RETURN_IF_ERROR(RunShiftNegativeStage(state, &cal->stats.shapes, cancel));
  }
  Decisions d;
  if (spec.mixed_precision.Requested()) {
    RETURN_IF_ERROR(
        clock.Begin(stage::kMixedPrecision, "searching the bit allocation"));
    ASSIGN_OR_RETURN(
        d.mixed_precision,
        RunMixedPrecision(spec.mixed_precision, kMpSimdPadding,
                          cal->stats.shapes, input.calibration, state, pool,
                          cancel, clock.sink(), reuse_sensitivity));
  }
  if (has_target) {
    RETURN_IF_ERROR(
        clock.Begin(stage::kTarget, "searching for the quality target"));
    QualityTargetInputs target_inputs =
        TargetInputs(input, context, cal, reuse_options);
    target_inputs.selected_weights = &selected_weights;
    ASSIGN_OR_RETURN(d.target, RunQualityTarget(target_inputs, *calibrated,
                                                state, &d.mixed_precision, pool,
                                                cancel, clock.sink()));
  } else {
    RETURN_IF_ERROR(clock.Begin(stage::kCorrect, "bias corrections"));
    RETURN_IF_ERROR(ApplyCorrections(state, cancel));
  }
  return d;
}

// A quality target the search did not reach, with data_channel_equalization
// left unset: the same stages again on the channel-equalized graph (a free
// option: the function and the memory stay), and the better search stays.
// The first calibration's kept float values are dropped first, so that at
// most one set is held.
absl::Status TryChannelEqualization(const JobInput& input,
                                    const JobContext& context,
                                    StageClock& clock, const Model& imported,
                                    std::vector<std::string> warnings,
                                    Calibration* cal, JobState* state,
                                    Decisions* decisions) {
  QualityTargetOutcome& first = *decisions->target;
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(
      ReachMemoryStage(context, JobMemoryStage::kTargetEqualization));
  cal->stats.kept = KeptFloatRuns();
  JobState alt;
  alt.options = input.spec.ptq;  // without the first graph's Hessian scores
  alt.options.data_channel_equalization = true;
  alt.model = imported;
  alt.warnings = std::move(warnings);
  ASSIGN_OR_RETURN(Calibration alt_cal,
                   PrepareAndCalibrate(input, context, clock, &alt));
  ASSIGN_OR_RETURN(
      Decisions alt_d,
      Decide(input, context, clock, &alt_cal, &alt, &first.kept_options,
             &decisions->mixed_precision.sensitivity));
  QualityTargetOutcome& second = *alt_d.target;
  const bool better = second.best_figure > first.best_figure;
  // Its cost: the second preparation, calibration, selection and search.
  QualityTargetStep step{
      "data_channel_equalization: true, searched again", second.best_figure,
      better,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count()};
  if (!better) {
    first.report.steps.push_back(std::move(step));
    return absl::OkStatus();
  }
  // The report keeps the request's baseline and every trial of both.
  std::vector<QualityTargetStep> steps = std::move(first.report.steps);
  steps.push_back(std::move(step));
  for (QualityTargetStep& s : second.report.steps)
    steps.push_back(std::move(s));
  second.report.steps = std::move(steps);
  second.report.baseline = first.report.baseline;
  second.report.changes.insert(
      second.report.changes.begin(),
      QualityTargetChange{"", "data_channel_equalization", "false", "true"});
  second.best_description = absl::StrCat("data_channel_equalization: true, ",
                                         second.best_description);
  *state = std::move(alt);
  *cal = std::move(alt_cal);
  *decisions = std::move(alt_d);
  return absl::OkStatus();
}

// Every stage after the preflight.
// The per-layer analysis by `method`: unspecified estimates when the model
// as imported (`imported`, as admission decided) has a backward pass, else
// runs the exact analysis with a warning naming the op.
absl::StatusOr<std::vector<LayerSensitivity>> AnalyzeSensitivity(
    SensitivityMethod method, const Model& imported, const Model& float_graph,
    const Model& quantized, const QdqPlan& plan,
    const std::vector<SampleFeeds>& samples,
    const SensitivityAnalysisOptions& options, const JobContext& context,
    StageClock& clock, std::vector<std::string>* warnings) {
  const auto exact = [&] {
    return AnalyzeLayerSensitivity(float_graph, quantized, plan, samples,
                                   options, context.pool, context.cancel,
                                   clock.sink());
  };
  if (method == SensitivityMethod::kExact) return exact();
  absl::Status estimable = method == SensitivityMethod::kAuto
                               ? SensitivityEstimateApplies(imported)
                               : absl::OkStatus();
  if (estimable.ok()) {
    auto estimated = EstimateLayerSensitivity(
        float_graph, quantized, plan, samples, options,
        kSensitivityEstimateProbes, context.pool, context.cancel, clock.sink());
    if (estimated.ok() || method == SensitivityMethod::kEstimate ||
        estimated.status().code() != absl::StatusCode::kUnimplemented) {
      return estimated;
    }
    estimable = estimated.status();  // an op the job's rewrites added
  }
  if (method == SensitivityMethod::kEstimate) return estimable;
  warnings->push_back(
      absl::StrCat("sensitivity analysis: exact, not estimated (",
                   estimable.message(), ")"));
  return exact();
}

absl::StatusOr<v1::QuantizeResult> RunStages(JobInput input,
                                             const JobContext& context,
                                             StageClock& clock,
                                             JobArtifacts* artifacts) {
  const JobSpec& spec = input.spec;
  const ResolvedTpc& tpc = input.tpc;
  JobState state;
  state.options = spec.ptq;
  state.model = std::move(input.model);
  state.warnings = std::move(input.warnings);
  // The model as imported (its tensors shared copy-on-write): its declared
  // inputs and outputs go back into the exports (dynamic_shapes.h).
  const Model float_model = state.model;
  const std::vector<std::string> import_warnings = state.warnings;
  ASSIGN_OR_RETURN(Calibration cal,
                   PrepareAndCalibrate(input, context, clock, &state));
  ASSIGN_OR_RETURN(Decisions decisions,
                   Decide(input, context, clock, &cal, &state));
  if (spec.strict && !state.unmatched_filters.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::StrJoin(state.unmatched_filters, ", "),
                     ": matches no node (strict)"));
  }
  if (decisions.target.has_value() && !decisions.target->report.met &&
      !spec.data_channel_equalization_set) {
    RETURN_IF_ERROR(TryChannelEqualization(input, context, clock, float_model,
                                           import_warnings, &cal, &state,
                                           &decisions));
  }
  if (decisions.target.has_value() && !decisions.target->report.met &&
      spec.TargetTriesGptq()) {
    RETURN_IF_ERROR(ReachMemoryStage(context, JobMemoryStage::kTargetGptq));
    RETURN_IF_ERROR(
        clock.Begin(stage::kGptq, "GPTQ, the quality target's trial"));
    RETURN_IF_ERROR(TryGptqForTarget(TargetInputs(input, context, &cal), &state,
                                     &*decisions.target, context.pool,
                                     context.cancel, clock.sink()));
  }
  RETURN_IF_ERROR(CheckTargetBeforeGptq(spec, tpc.ref, decisions.target));
  // GPTQ (the float model: the targets, before the corrections).
  if (spec.gptq_enabled) {
    RETURN_IF_ERROR(clock.Begin(stage::kGptq, "gradient-based rounding"));
    RETURN_IF_ERROR(RunGptq(*spec.gptq, *cal.float_exec, input.calibration,
                            spec.export_options, &state, context.pool,
                            context.cancel, clock.sink()));
  }

  // Export: the decisions lowered once to the Q/DQ plan, which the QDQ
  // model and the fake-quant evaluation share.
  RETURN_IF_ERROR(clock.Begin(stage::kExport, "lowering to Q/DQ"));
  v1::QuantizeResult result;
  ASSIGN_OR_RETURN(QdqPlan plan, LowerToQdqPlan(state, spec.export_options));
  plan.metadata = {{"quantd.tpc", tpc.ref}, {"quantd.tpc_digest", tpc.digest}};
  for (std::string& w :
       PlaceSingleChannelGuards(state.model, float_model.graph.inputs, &plan)) {
    state.warnings.push_back(std::move(w));
  }
  RETURN_IF_ERROR(clock.Check());
  RETURN_IF_ERROR(ExportModels(spec.export_options, tpc, plan, float_model,
                               &state, clock, &result));

  // Per-layer sensitivity (if asked), on the report's samples.
  std::vector<LayerSensitivity> sensitivity;
  if (spec.sensitivity_analysis) {
    RETURN_IF_ERROR(clock.Begin(stage::kAnalyze, "per-layer sensitivity"));
    // Chunks sized to the cache budget (the memory model counts the same).
    SensitivityAnalysisOptions analysis;
    analysis.chunk_samples = AnalysisChunkSamples(input.activations.total);
    ASSIGN_OR_RETURN(sensitivity,
                     AnalyzeSensitivity(spec.sensitivity_method, float_model,
                                        cal.float_exec->model(), state.model,
                                        plan, input.evaluation, analysis,
                                        context, clock, &state.warnings));
  }

  RETURN_IF_ERROR(clock.Begin(stage::kReport, "evaluating against float"));
  ReportStageInputs report_inputs;
  report_inputs.spec = &spec;
  report_inputs.tpc = &tpc;
  report_inputs.float_model = cal.float_exec.get();
  report_inputs.exec_options = &cal.exec_options;
  report_inputs.evaluation = &input.evaluation;
  report_inputs.num_calibration_samples =
      static_cast<int>(input.calibration.size());
  report_inputs.model_sha256 = &input.model_sha256;
  report_inputs.shapes = &cal.stats.shapes;
  report_inputs.mixed_precision = &decisions.mixed_precision;
  report_inputs.sensitivity = &sensitivity;
  report_inputs.kept = &cal.stats.kept;
  ASSIGN_OR_RETURN(
      JobReport report,
      BuildJobReport(report_inputs, plan, std::move(decisions.target), &state,
                     context.cancel, clock.sink()));
  clock.End();
  report.report.timings_seconds = clock.timings();
  FillResult(report.report, tpc, std::move(report.quantized_graph), &result);
  if (artifacts != nullptr) {
    artifacts->prepared_model = std::move(state.model);
    artifacts->plan = std::move(plan);
  }
  return result;
}

}  // namespace

absl::StatusOr<v1::QuantizeResult> RunQuantizeJob(
    const v1::QuantizeRequest& request, const JobContext& context) {
  return RunQuantizeJobWithArtifacts(request, context, nullptr);
}

absl::StatusOr<v1::QuantizeResult> RunQuantizeJobWithArtifacts(
    const v1::QuantizeRequest& request, const JobContext& context,
    JobArtifacts* artifacts) {
  // Stages report from several threads; clients must never see a stage's
  // fraction go back.
  MonotonicProgressSink progress(context.progress);
  StageClock clock(context.progress != nullptr ? &progress : nullptr,
                   context.cancel, context.on_stage_start);
  ASSIGN_OR_RETURN(JobInput input, Preflight(request, context, clock));
  if (input.spec.generate.has_value()) {
    RETURN_IF_ERROR(
        clock.Begin(stage::kGenerate, "generating calibration data"));
    RETURN_IF_ERROR(GenerateCalibration(context.pool, context.cancel,
                                        clock.sink(), &input));
  }
  return RunStages(std::move(input), context, clock, artifacts);
}

}  // namespace quantd
