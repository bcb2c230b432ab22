// MCT's activation bias correction (QuantizationConfig
// .activation_bias_correction, compute_activation_bias_correction_of_graph
// .py): quantizing a layer's input shifts its mean; for a Gemm or a 1x1 Conv
// whose input is a quantized activation the shift is estimated from that
// tensor's calibration histogram,
//   d = sum_b count_b * (center(q(edges))_b - center(edges)_b) / sum_b count_b,
// and d * sum_{non-output axes} W is subtracted from the bias. With
// activation_bias_correction_threshold > 0, a node is corrected only when
// 100 * |d| / |mean| reaches the threshold (mean: the float histogram's).
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_ACTIVATION_BIAS_CORRECTION_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_ACTIVATION_BIAS_CORRECTION_H_

#include <optional>

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"
#include "core/qdq/quantization_params.h"
#include "core/quantizers/types.h"
#include "core/runtime/cancellation.h"

namespace quantd {

// The mean shift d of a tensor with histogram `h` quantized with `a`;
// nullopt for an empty histogram or a LUT activation.
std::optional<double> ActivationMeanShift(const quantizers::Histogram& h,
                                          const ActivationParams& a);

// Corrects every eligible node of the state (after weights bias correction,
// as MCT's ptq runner orders them). A cancelled `cancel` stops it between
// nodes with the token's status.
absl::Status ApplyActivationBiasCorrection(
    JobState* state, const CancellationToken* cancel = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_ACTIVATION_BIAS_CORRECTION_H_
