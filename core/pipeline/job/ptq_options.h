// MCT's QuantizationConfig with every default resolved (mct-reference §1.3):
// unset optional fields of the request take MCT's values.
#ifndef QUANTD_CORE_PIPELINE_JOB_PTQ_OPTIONS_H_
#define QUANTD_CORE_PIPELINE_JOB_PTQ_OPTIONS_H_

#include <limits>
#include <memory>

#include "absl/status/statusor.h"
#include "core/hessian/hessian_scores.h"
#include "core/quantizers/types.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

struct PtqOptions {
  quantizers::ErrorMethod activation_error_method =
      quantizers::ErrorMethod::kMse;
  quantizers::ErrorMethod weights_error_method = quantizers::ErrorMethod::kMse;
  bool relu_bound_to_power_of_2 = false;
  bool weights_bias_correction = true;
  bool weights_second_moment_correction = false;
  bool softmax_shift = false;
  bool shift_negative_activation_correction = true;
  bool activation_channel_equalization = false;
  bool data_channel_equalization = false;
  double data_channel_equalization_alpha = 0.5;
  double data_channel_equalization_max_scale = 16.0;
  double z_threshold = std::numeric_limits<double>::infinity();
  int l_p_value = 2;
  bool linear_collapsing = true;
  bool residual_collapsing = true;
  double shift_negative_ratio = 0.05;
  bool shift_negative_threshold_recalculation = false;
  bool shift_negative_params_search = false;
  bool shift_negative_constant_add = false;
  bool concat_threshold_update = false;
  bool activation_bias_correction = false;
  double activation_bias_correction_threshold = 0.0;
  int max_calibration_samples = 0;  // 0 = all
  // Not an option of the request: the HMSE weights search's per-element
  // Hessian scores of every kernel (core/pipeline/ptq/hessian_scores.h),
  // set by the `hessian` stage when weights_error_method is HMSE. Shared,
  // immutable: copies of the options (job states, trials) share them.
  std::shared_ptr<const hessian::HessianScores> hessian_scores;
};

// Resolves defaults and checks ranges; errors name the field
// (`quantization.l_p_value: must be >= 1, got 0`). HMSE is rejected here
// unless GPTQ runs (as MCT does).
absl::StatusOr<PtqOptions> ResolvePtqOptions(const v1::QuantizationConfig& c,
                                             bool running_gptq);

quantizers::ErrorMethod ToErrorMethod(v1::ErrorMethod method);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_PTQ_OPTIONS_H_
