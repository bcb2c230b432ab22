// Attaching the TPC: the per-node plans of a job.
#ifndef QUANTD_CORE_PIPELINE_PREP_ATTACH_H_
#define QUANTD_CORE_PIPELINE_PREP_ATTACH_H_

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"
#include "core/tpc/registry.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// attach.cc: TPC -> one NodePlan per node: op set and candidates (custom
// op-set mapping of the request first), base config (or the candidate with
// `kernel_weights_bits` kernel bits), fusing groups (inner nodes unquantized
// unless v2's fuse_op_quantization_config enables it), quantization
// preserving ops, the next-node supported_input_activation_n_bits filter,
// TPC-forced signedness, weight slots (kernel, bias, constant inputs via
// pos_attr), FrameworkInfo's known ranges and no-quantization ops, and the
// graph inputs' config (default_qco, as MCT's input layer), and last the
// request's keep_float nodes, left float (unmatched filters: warnings).
absl::Status AttachTpc(tpc::TpcPtr tpc, const v1::QuantizationConfig& config,
                       int kernel_weights_bits, JobState* state);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_ATTACH_H_
