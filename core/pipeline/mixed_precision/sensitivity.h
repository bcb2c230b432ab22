// Mixed-precision sensitivity on the executor (MCT's SensitivityEvaluation,
// mct-reference §1.4): for each configurable node i and candidate j, the
// distance between the float model and the model in which ONLY node i is
// quantized, at candidate j (its weights and/or its output activation, as
// the caller's plan says), measured at the interest points and the graph
// outputs on the given samples and aggregated with MCT's distance weighting.
//
// Reuse: the float model runs once per sample and its tensors are cached;
// a (node, candidate) evaluation runs only node i's downstream cone (the
// nodes that depend on its output), fed from that cache, and the distance at
// interest points outside the cone is exactly 0. Tasks (node, candidate) run
// in parallel on the pool over chunks of samples; every distance has its own
// slot and aggregation runs in a fixed order, so the result is identical for
// any thread count.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_SENSITIVITY_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_SENSITIVITY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/mixed_precision/distance_weighting.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

enum class DistanceKind { kNormalizedMse, kKl, kCosine };

struct InterestPoint {
  std::string tensor;
  DistanceKind kind = DistanceKind::kNormalizedMse;
};

// MCT's interest points (count_node_for_mixed_precision_interest_points):
// outputs of Conv, ConvTranspose, Gemm, MatMul, Sigmoid, Softmax, Add and
// Concat nodes that are not inside a fused group, thinned evenly to
// ceil(factor * count) points when factor < 1. Distance: KL for Softmax,
// cosine for Sigmoid, Gemm and MatMul (MCT's torch Linear), normalized MSE
// otherwise.
std::vector<InterestPoint> MpInterestPoints(const Model& model,
                                            const std::vector<NodePlan>& plans,
                                            double factor = 1.0);

// Graph outputs with the distance of their producer's type.
std::vector<InterestPoint> MpOutputPoints(const Model& model);

// One candidate of a configurable node: what to quantize at that node (the
// selected parameters of the candidate's config). Unset activation / empty
// weights = that part stays float.
struct SensitivityCandidate {
  std::optional<ActivationParams> activation;
  std::vector<WeightParams> weights;
};

struct SensitivityNode {
  int node = 0;  // index into model.graph.nodes
  std::vector<SensitivityCandidate> candidates;
};

struct SensitivityOptions {
  mixed_precision::WeightingOptions weighting;
  // Samples per chunk held in the float cache at once.
  int chunk_samples = 8;
};

// result[k][j] = sensitivity of nodes[k] at candidate j (before MCT's
// metric_epsilon rule, which the caller applies).
absl::StatusOr<std::vector<std::vector<double>>> ComputeSensitivities(
    const Model& model, const std::vector<SensitivityNode>& nodes,
    const std::vector<InterestPoint>& interest_points,
    const std::vector<InterestPoint>& outputs,
    const std::vector<SampleFeeds>& samples, const SensitivityOptions& options,
    ThreadPool* pool, const CancellationToken* cancel, ProgressSink* progress);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_SENSITIVITY_H_
