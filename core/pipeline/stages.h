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
