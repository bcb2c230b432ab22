// Per-layer sensitivity analysis (MCT's Xquant, AIMET's QuantAnalyzer): for
// each node that quantizes something (its weights, its output activations),
// the SQNR of the model outputs against float when ONLY that node is
// quantized, and when every node is quantized EXCEPT that one.
//
// A node's quantization is its part of the Q/DQ plan plus the corrected
// constants the job gave it (bias correction, GPTQ's bias): its float form
// takes the float model's constants back. The reference is the float form of
// the whole graph (the float model; graph rewrites made by the corrections,
// such as shift-negative's added shift, are kept and are exact in float).
// Graph-input activations belong to no node: they stay float in the
// only-quantized runs and quantized in the only-float runs.
//
// Reuse: the float model and the fully fake-quantized model each run once
// per sample with every tensor kept; an only-quantized run is the node's
// downstream cone fed from the float cache, an only-float run the same cone
// fed from the fake-quant cache (what precedes the node is the same as in the
// full run). Nodes run in parallel, the cancellation token is checked per
// node, and sums are merged in sample order: the figures do not depend on
// the thread count.
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_SENSITIVITY_ANALYSIS_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_SENSITIVITY_ANALYSIS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/pipeline/evaluation/sensitivity_method.h"
#include "core/pipeline/job/samples.h"
#include "core/qdq/qdq_plan.h"
#include "core/report/report.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

struct LayerSensitivity {
  std::string node;
  bool estimated = false;  // by EstimateLayerSensitivity
  // Output SQNR (all graph outputs together) in dB; +inf when exact.
  double sqnr_only_quantized_db = 0;
  double sqnr_only_float_db = 0;
};

struct SensitivityAnalysisOptions {
  // Samples whose tensors are cached at once (float and fake-quant runs).
  int chunk_samples = 8;
  // Only the only-float runs (sqnr_only_quantized_db is NaN): half the
  // cost, for the quality target's ranking, which reads only those.
  bool only_float_runs = false;
};

// Random probes per sample of the estimate (docs/analysis.md, *The
// estimate*: ppocr_rec's rank correlation with the exact figures is 0.973
// with 2, 0.975 with 4, at 1.3x the time).
inline constexpr int kSensitivityEstimateProbes = 2;

// What the float and fake-quant caches of one chunk may hold at once: a
// chunk holds fewer samples when theirs would exceed it (a sample whose two
// caches alone exceed it runs alone). Every node's cone still runs once per
// sample, so smaller chunks change no figure, only how many samples share a
// round of node tasks.
inline constexpr int64_t kAnalysisCacheBudgetBytes = int64_t{256} << 20;

// The chunk for samples of `activation_bytes` each (the sum of every
// activation of one sample; 0 when unknown): in [1, 8].
int AnalysisChunkSamples(int64_t activation_bytes);

// `float_model`: the float graph the job calibrated (node names shared with
// `quantized_model`); `quantized_model` + `plan`: the job's graph after the
// corrections and its Q/DQ plan (what the report's fake-quant run executes).
// One entry per node with planned items, in graph order. Progress is
// reported under the stage "analyze".
absl::StatusOr<std::vector<LayerSensitivity>> AnalyzeLayerSensitivity(
    const Model& float_model, const Model& quantized_model, const QdqPlan& plan,
    const std::vector<SampleFeeds>& samples,
    const SensitivityAnalysisOptions& options, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress);

// The first-order estimate of the same figures (docs/analysis.md, *The
// estimate*): per sample, each node's change at its outputs when only it
// is quantized (the node run alone from the float run's values), weighted
// by the float model's gradients there: the only-quantized output noise is
// E_v[((J^T v) . d)^2] over Rademacher v on the graph outputs, with
// `probes` backward passes per sample giving J^T v at every node at once.
// There is no only-float figure (NaN): first-order noises around the float
// model do not add up to the quantized model's. UNIMPLEMENTED
// naming the node when an op on the path from the inputs has no backward
// pass (core/autodiff). The same bytes on any thread count.
absl::StatusOr<std::vector<LayerSensitivity>> EstimateLayerSensitivity(
    const Model& float_model, const Model& quantized_model, const QdqPlan& plan,
    const std::vector<SampleFeeds>& samples,
    const SensitivityAnalysisOptions& options, int probes, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress);

// OK when EstimateLayerSensitivity can run on `float_model` (every op on the
// path from its inputs has a backward pass), else its UNIMPLEMENTED naming
// the node. What kAuto decides by, on the model as imported.
absl::Status SensitivityEstimateApplies(const Model& float_model);

// kAuto resolved on the model as imported; the others as they are.
SensitivityMethod ResolveSensitivityMethod(SensitivityMethod method,
                                           const Model& float_model);

// Copies the figures into the report rows of the same nodes.
void FillLayerSensitivity(const std::vector<LayerSensitivity>& sensitivity,
                          std::vector<LayerReport>* layers);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_SENSITIVITY_ANALYSIS_H_
