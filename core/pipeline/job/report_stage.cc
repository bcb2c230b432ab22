#include "core/pipeline/job/report_stage.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "core/pipeline/evaluation/evaluation.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/quantized_graph_builder.h"
#include "core/pipeline/job/report_details.h"
#include "core/pipeline/mixed_precision/resource_utilization.h"
#include "core/tpc/attribute_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

std::string MethodName(v1::QuantizationMethod m) {
  std::string s = v1::QuantizationMethod_Name(m);
  const std::string prefix = "QUANTIZATION_METHOD_";
  if (s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
  return s;
}

// One report row per node of the quantized graph.
std::vector<LayerReport> LayerReports(const EvaluationResult& eval,
                                      const JobState& state,
                                      const v1::QuantizedGraph& qg) {
  std::vector<LayerReport> layers;
  for (const v1::QuantizedNode& n : qg.nodes()) {
    LayerReport l;
    l.node = n.name();
    l.op_type = n.op_type();
    l.op_set = n.op_set();
    l.fused_group = n.fused_group();
    l.weights_bits = n.weights_bits();
    l.activation_bits = n.activation_bits();
    for (const auto& w : n.weights()) {
      if (w.attr() == tpc::kKernelAttr || l.weights_method.empty()) {
        l.weights_method = MethodName(w.method());
      }
    }
    if (n.activations_size() > 0) {
      l.activation_method = MethodName(n.activations(0).method());
    }
    if (!n.outputs().empty()) {
      auto it = eval.tensor_sqnr_db.find(n.outputs(0));
      if (it != eval.tensor_sqnr_db.end()) l.sqnr_db = it->second;
    }
    l.float_reason = n.float_reason();
    for (const GptqLayerError& e : state.gptq_layers) {
      if (e.node != n.name()) continue;
      l.gptq_sqnr_before_db = e.sqnr_before_db;
      l.gptq_sqnr_after_db = e.sqnr_after_db;
      l.gptq_applied = e.applied;
    }
    layers.push_back(std::move(l));
  }
  return layers;
}

// Error figures of the fake-quantized model against float on the
// evaluation samples. The float model is the snapshot taken before bias
// correction: the reference is the float model, the corrected biases belong
// to the quantized one.
absl::StatusOr<EvaluationResult> Evaluate(const ReportStageInputs& in,
                                          const JobState& state,
                                          const QdqPlan& plan,
                                          const CancellationToken* cancel,
                                          ProgressSink* sink) {
  ASSIGN_OR_RETURN(Model fq_model, WithFakeQuantWeights(state.model, plan));
  if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> fq_exec,
                   Executor::Create(std::move(fq_model), *in.exec_options));
  ActivationFakeQuantizer quantizer(plan);
  std::set<std::string> tensors;
  for (const Node& n : state.model.graph.nodes) {
    if (!n.outputs.empty()) tensors.insert(n.outputs[0]);
  }
  return EvaluateFakeQuant(*in.float_model, *fq_exec, quantizer, *in.evaluation,
                           tensors, in.exec_options->pool, cancel, sink,
                           in.kept);
}

// The worst output's mean cosine (the quality target's cosine figure).
double WorstCosine(const EvaluationResult& eval) {
  double c = 1;
  for (const OutputReport& o : eval.outputs) {
    if (o.cosine.has_value()) c = std::min(c, *o.cosine);
  }
  return c;
}

// The quality target on the final model (after GPTQ, when it ran), into
// the outcome's report; FAILED_PRECONDITION when it falls short.
absl::Status CheckFinalFigure(const QualityTargetOptions& target,
                              const std::string& tpc, bool after_gptq,
                              const EvaluationResult& eval,
                              QualityTargetOutcome* outcome) {
  QualityTargetReport& q = outcome->report;
  const double reached = target.metric == QualityTargetOptions::Metric::kCosine
                             ? WorstCosine(eval)
                             : eval.output_sqnr_db.value_or(0.0);
  q.reached = reached;
  q.met = TargetMet(target, reached);
  if (q.met) return absl::OkStatus();
  return TargetOutOfReachError(
      target, tpc, std::max(reached, outcome->best_figure),
      after_gptq && reached >= outcome->best_figure ? "after GPTQ"
                                                    : outcome->best_description,
      q.baseline.value_or(0.0));
}

}  // namespace

absl::StatusOr<JobReport> BuildJobReport(
    const ReportStageInputs& in, const QdqPlan& plan,
    std::optional<QualityTargetOutcome> target, JobState* state,
    const CancellationToken* cancel, ProgressSink* sink) {
  const ResolvedTpc& tpc = *in.tpc;
  ASSIGN_OR_RETURN(EvaluationResult eval,
                   Evaluate(in, *state, plan, cancel, sink));
  QuantizedGraphExtras extras;
  extras.tpc = tpc.ref;
  extras.tpc_digest = tpc.digest;
  extras.candidate_sensitivity = &in.mixed_precision->sensitivity;
  extras.tensor_sqnr_db = &eval.tensor_sqnr_db;
  JobReport out;
  out.quantized_graph = BuildQuantizedGraph(*state, extras);
  ReportData& report = out.report;
  report.model_name = state->model.graph.name;
  report.tpc = tpc.ref;
  report.tpc_digest = tpc.digest;
  report.num_calibration_samples = in.num_calibration_samples;
  report.num_evaluation_samples = static_cast<int>(in.evaluation->size());
  report.layers = LayerReports(eval, *state, out.quantized_graph);
  FillLayerSensitivity(*in.sensitivity, &report.layers);
  report.outputs = eval.outputs;
  report.output_sqnr_db = eval.output_sqnr_db;
  report.resource_utilization =
      ComputeResourceUtilization(*state, *in.shapes, 0, kMpSimdPadding);
  report.baseline_8bit =
      ComputeResourceUtilization(*state, *in.shapes, 8, kMpSimdPadding);
  report.targets = in.mixed_precision->targets;
  for (std::string& w :
       TargetOverrunWarnings(report.resource_utilization, report.targets)) {
    state->warnings.push_back(std::move(w));
  }
  if (target.has_value()) {
    const QualityTargetOptions& goal = *in.spec->target;
    absl::Status met =
        CheckFinalFigure(goal, tpc.ref, in.spec->gptq_enabled, eval, &*target);
    if (!met.ok() && !goal.best_effort) return met;
    // Best effort: the best configuration found, and why it falls short.
    if (!met.ok()) state->warnings.push_back(std::string(met.message()));
    report.quality_target = std::move(target->report);
  }
  report.warnings = state->warnings;
  AddReportDetails(*state, out.quantized_graph, in.spec->options_text,
                   *in.model_sha256, &report);
  return out;
}

void FillResult(const ReportData& report, const ResolvedTpc& tpc,
                v1::QuantizedGraph qg, v1::QuantizeResult* result) {
  *result->mutable_quantized_graph() = std::move(qg);
  result->set_report_json(ReportToJson(report));
  result->set_report_html(ReportToHtml(report));
  *result->mutable_resource_utilization() =
      ToProto(report.resource_utilization);
  *result->mutable_baseline_8bit() = ToProto(report.baseline_8bit);
  *result->mutable_targets() = ToProto(report.targets);
  result->set_output_sqnr_db(report.output_sqnr_db &&
                                     std::isfinite(*report.output_sqnr_db)
                                 ? *report.output_sqnr_db
                                 : 0.0);
  result->set_tpc(tpc.ref);
  result->set_tpc_digest(tpc.digest);
}

}  // namespace quantd
