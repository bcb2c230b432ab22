// MCT's weights bias correction (statistics_correction/, mct-reference
// §1.3): for a linear node with a quantized kernel, the expected output shift
// caused by quantizing the kernel, c = sum_spatial(Wq - W) . mu_in (mu_in the
// per-channel mean of the node's float input over the calibration samples;
// grouped convolutions per group), is subtracted from the bias (a zero bias
// is added when the node has none). Conv and Gemm (alpha = beta = 1, no
// transA) are corrected; constant-input (pos_attr) weights are not.
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_BIAS_CORRECTION_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_BIAS_CORRECTION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/pipeline/job/job_state.h"
#include "core/runtime/cancellation.h"

namespace quantd {

// True for the nodes ApplyBiasCorrection handles (the pipeline collects the
// input means of exactly these).
bool SupportsBiasCorrection(const Node& node);

// The correction term c (one per output channel) for `node` with float
// kernel `w`, dequantized kernel `wq` and input channel means `mean_in`.
absl::StatusOr<std::vector<double>> BiasCorrectionTerm(
    const Node& node, const Tensor& w, const Tensor& wq,
    const std::vector<double>& mean_in);

// bias -= c for a node whose input 2 is a constant bias of c.size()
// elements, or is absent (a zero bias is added); the corrected bias is a new
// private initializer. A non-constant bias is left as is.
absl::Status SubtractFromBias(const std::vector<double>& c, Graph* g,
                              Node* node);

// Applies the correction to every eligible node of the state (biases are
// replaced by private corrected initializers). A cancelled `cancel` stops it
// between nodes with the token's status.
absl::Status ApplyBiasCorrection(JobState* state,
                                 const CancellationToken* cancel = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_BIAS_CORRECTION_H_
