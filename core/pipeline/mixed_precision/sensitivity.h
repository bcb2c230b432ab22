// Mixed-precision sensitivity on the executor (MCT's SensitivityEvaluation,
// mct-reference §1.4): for each configurable node i and candidate j, the
// distance between the float model and the model in which ONLY node i is
// quantized, at candidate j (its weights and/or its output activation, as
// the caller's plan says), measured at the interest points and the graph
// outputs on the given samples and aggregated with MCT's distance weighting.
//
// Reuse: the float model runs once per sample, keeping only the tensors the
// evaluations read or compare, with the float-side sums of every compared
// tensor (internal/float_reference.h); a (node, candidate) evaluation runs
// only node i's downstream cone (the nodes that depend on its output), fed
// from that cache, and the distance at interest points outside the cone is
// exactly 0. Each task (node, candidate) builds its executor once per chunk
// of samples and runs the samples one at a time, measuring each compared
// tensor as soon as the cone makes it (sample_distance.h: the tensor is
// still in cache, and nothing is kept past its last consumer). Tasks run in
// parallel on the pool; every distance has its own slot and aggregation
// runs in a fixed order, so the result is identical for any thread count or
// chunk size.
//
// Memory: the float cache holds one chunk of samples, sized so that it
// stays within cache_budget_bytes (four samples at least); each running task
// holds one run of its cone (SensitivityMemoryBytes).
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_SENSITIVITY_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_SENSITIVITY_H_

#include <cstdint>
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

// Whether an op's output is one of MCT's interest points (unless fused).
bool IsMpInterestOp(const std::string& op_type);

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

// The float cache's budget by default (256 MiB): ppocr_det at 320x320 keeps
// 77 MB a sample (4 samples a chunk, the minimum), MobileNetV2 28 MB (8),
// ppocr_cls 3.3 MB (all 32).
inline constexpr int64_t kSensitivityCacheBudgetBytes = int64_t{256} << 20;

struct SensitivityOptions {
  mixed_precision::WeightingOptions weighting;
  // At most this many samples per chunk held in the float cache at once...
  int chunk_samples = 32;
  // ... and at most this many bytes (the first sample's cache decides), but
  // four samples at least (each chunk builds the tasks' executors again).
  // 0 = no byte limit.
  int64_t cache_budget_bytes = kSensitivityCacheBudgetBytes;
  // 0: MCT's sensitivity, each node's whole downstream cone to the graph
  // outputs. N > 0: each path of a cone ends at its N-th interest point (a
  // local sensitivity: far fewer nodes run, not MCT's figures).
  int depth = 0;
};

// Samples in each chunk of `samples` when the float cache keeps
// `kept_bytes_per_sample` of each (0: unknown, no byte limit).
int SensitivityChunkSamples(int64_t kept_bytes_per_sample, int samples,
                            const SensitivityOptions& options = {});

// ComputeSensitivities' memory, what admission reserves for the
// mixed-precision stage: the float cache (a chunk of samples keeping
// `kept_bytes_per_sample` each) and, at once, the larger of the running
// tasks (`threads`) and the float runs that fill the cache
// (`fill_bytes`). A task holds one run of its cone, counted as 2x
// `run_bytes` (the most bytes a cone run holds at once: the graph's live
// set for whole cones, as calibration's runs count it).
int64_t SensitivityMemoryBytes(int64_t kept_bytes_per_sample, int64_t run_bytes,
                               int64_t fill_bytes, int samples, int threads,
                               const SensitivityOptions& options = {});

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
