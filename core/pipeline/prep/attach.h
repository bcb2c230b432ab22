// Attaching the TPC: the per-node plans of a job.
#ifndef QUANTD_CORE_PIPELINE_PREP_ATTACH_H_
#define QUANTD_CORE_PIPELINE_PREP_ATTACH_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/prep/node_filter.h"
#include "core/tpc/framework_info.h"
#include "core/tpc/registry.h"

namespace quantd {

// What attaching reads of the job spec.
struct AttachOptions {
  // The request's op-set -> ONNX op mapping, tried before the built-in one.
  std::optional<v1::OpsetLayerMapping> custom_opset_mapping;
  tpc::OnnxFrameworkInfo framework_info = tpc::OnnxFrameworkInfo::Default();
  // Nodes left float whatever the TPC says (quantization.keep_float).
  std::vector<NodeFilter> keep_float;
  // Every kernel at these bits (a TPC candidate); 0 = the base config.
  int kernel_weights_bits = 0;
};

// attach.cc: TPC -> one NodePlan per node: op set and candidates (custom
// op-set mapping of the request first), base config (or the candidate with
// `kernel_weights_bits` kernel bits), fusing groups (inner nodes unquantized
// unless v2's fuse_op_quantization_config enables it), quantization
// preserving ops, the next-node supported_input_activation_n_bits filter,
// TPC-forced signedness, weight slots (kernel, bias, constant inputs via
// pos_attr), FrameworkInfo's known ranges and no-quantization ops, and the
// graph inputs' config (default_qco, as MCT's input layer), and last the
// request's keep_float nodes, left float (unmatched filters: warnings).
absl::Status AttachTpc(tpc::TpcPtr tpc, const AttachOptions& options,
                       JobState* state);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_ATTACH_H_
