// The stages of a PTQ job that rewrite the graph or the plans, in the order
// RunQuantizeJob calls them (each in its own file).
#ifndef QUANTD_CORE_PIPELINE_STAGES_H_
#define QUANTD_CORE_PIPELINE_STAGES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"
#include "core/pipeline/job_state.h"
#include "core/tpc/registry.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/tpc.pb.h"

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

// post_statistics.cc: MCT's post-statistics substitutions, after parameter
// selection. Softmax shift: a linear node feeding Softmax gets -(max+min)/2
// of its observed output added to its bias; its statistics move by the same
// amount and its activation is selected again. Concat threshold update:
// every input of a Concat whose producer feeds only the Concat takes the
// Concat's threshold (threshold methods only). Each change is listed in
// state->warnings.
absl::Status ApplySoftmaxShift(JobState* state);
absl::Status ApplyConcatThresholdUpdate(JobState* state);

// attach.cc: TPC -> one NodePlan per node: op set and candidates (custom
// op-set mapping of the request first), base config (or the candidate with
// `kernel_weights_bits` kernel bits), fusing groups (inner nodes unquantized
// unless v2's fuse_op_quantization_config enables it), quantization
// preserving ops, the next-node supported_input_activation_n_bits filter,
// TPC-forced signedness, weight slots (kernel, bias, constant inputs via
// pos_attr), FrameworkInfo's known ranges and no-quantization ops, and the
// graph inputs' config (default_qco, as MCT's input layer).
absl::Status AttachTpc(tpc::TpcPtr tpc, const v1::QuantizationConfig& config,
                       int kernel_weights_bits, JobState* state);

// shift_negative.cc: MCT's shift-negative correction after parameter
// selection (inserts an Add after each corrected activation; the next
// linear node's bias absorbs the shift). Cases it cannot handle (a padded
// Conv after the activation, several consumers, ...) are left as they are
// and listed in state->warnings.
absl::Status ApplyShiftNegativeCorrection(JobState* state);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_STAGES_H_
