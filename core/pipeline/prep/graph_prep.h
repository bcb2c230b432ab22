// Graph preparation, the first stage of a job: the float graph made
// ready for quantization (MCT §1.3 substitutions).
#ifndef QUANTD_CORE_PIPELINE_PREP_GRAPH_PREP_H_
#define QUANTD_CORE_PIPELINE_PREP_GRAPH_PREP_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/pipeline/job/ptq_options.h"

namespace quantd {

// graph_prep.cc: opset >= 13, shape inference (with `input_shapes` when
// every sample has the same shapes), constant folding, identity removal, BN
// folding and forward folding, linear and residual collapsing (MCT §1.3).
absl::Status PrepareGraph(
    const PtqOptions& options,
    const std::map<std::string, std::vector<int64_t>>& input_shapes,
    Model* model, std::vector<std::string>* warnings);

// Upgrades the default-domain opset to `opset` (13 or 21) for QDQ export.
absl::Status UpgradeForQdq(int64_t opset, Model* model);

// collapsing.cc: Conv kxk -> Conv 1x1 merged into one Conv; Add(Conv(x), x)
// folded into the Conv's kernel. Return how many were collapsed.
absl::StatusOr<int> CollapseLinear(Model* model);
absl::StatusOr<int> CollapseResidual(Model* model);

// matmul_add_fusion.cc: MatMul(A [M, K], W [K, N] constant) + constant
// bias [N] becomes Gemm(A, W, b), one Linear layer as MCT sees it. Returns
// how many were fused.
absl::StatusOr<int> FuseMatMulAdd(Model* model);

// relu_bound.cc: MCT's relu_bound_to_power_of_2: Linear -> Clip(0, M) ->
// Linear with M not a power of two is rescaled so the Clip bound is 8 (the
// first linear node divided by M/8, the second multiplied). Returns how many
// were rescaled.
absl::StatusOr<int> ReluBoundToPowerOfTwo(Model* model);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_GRAPH_PREP_H_
