#include "core/pipeline/job/ptq_options.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace quantd {

quantizers::ErrorMethod ToErrorMethod(v1::ErrorMethod method) {
  switch (method) {
    case v1::ERROR_METHOD_NOCLIPPING:
      return quantizers::ErrorMethod::kNoClipping;
    case v1::ERROR_METHOD_MAE:
      return quantizers::ErrorMethod::kMae;
    case v1::ERROR_METHOD_KL:
      return quantizers::ErrorMethod::kKl;
    case v1::ERROR_METHOD_LP:
      return quantizers::ErrorMethod::kLp;
    case v1::ERROR_METHOD_HMSE:
      return quantizers::ErrorMethod::kHmse;
    case v1::ERROR_METHOD_MSE:
    default:
      return quantizers::ErrorMethod::kMse;
  }
}

absl::StatusOr<PtqOptions> ResolvePtqOptions(const v1::QuantizationConfig& c,
                                             bool running_gptq) {
  PtqOptions o;
  if (!v1::ErrorMethod_IsValid(c.activation_error_method())) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantization.activation_error_method: unknown value ",
                     c.activation_error_method()));
  }
  if (!v1::ErrorMethod_IsValid(c.weights_error_method())) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantization.weights_error_method: unknown value ",
                     c.weights_error_method()));
  }
  o.activation_error_method = ToErrorMethod(c.activation_error_method());
  o.weights_error_method = ToErrorMethod(c.weights_error_method());
  if (o.activation_error_method == quantizers::ErrorMethod::kHmse) {
    return absl::InvalidArgumentError(
        "quantization.activation_error_method: HMSE applies to weights only");
  }
  if (o.weights_error_method == quantizers::ErrorMethod::kHmse &&
      !running_gptq) {
    return absl::InvalidArgumentError(
        "quantization.weights_error_method: HMSE needs GPTQ (gptq.enabled), "
        "as in MCT");
  }
  if (c.has_relu_bound_to_power_of_2()) {
    o.relu_bound_to_power_of_2 = c.relu_bound_to_power_of_2();
  }
  if (c.has_weights_bias_correction()) {
    o.weights_bias_correction = c.weights_bias_correction();
  }
  if (c.has_weights_second_moment_correction()) {
    o.weights_second_moment_correction = c.weights_second_moment_correction();
  }
  if (c.has_softmax_shift()) o.softmax_shift = c.softmax_shift();
  if (c.has_shift_negative_activation_correction()) {
    o.shift_negative_activation_correction =
        c.shift_negative_activation_correction();
  }
  if (c.has_activation_channel_equalization()) {
    o.activation_channel_equalization = c.activation_channel_equalization();
  }
  if (c.has_data_channel_equalization()) {
    o.data_channel_equalization = c.data_channel_equalization();
  }
  if (c.has_data_channel_equalization_alpha()) {
    const double a = c.data_channel_equalization_alpha();
    if (!(a > 0 && a <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantization.data_channel_equalization_alpha: must be in (0, 1], "
          "got ",
          a));
    }
    o.data_channel_equalization_alpha = a;
  }
  if (c.has_data_channel_equalization_max_scale()) {
    const double m = c.data_channel_equalization_max_scale();
    if (!(m >= 1 && std::isfinite(m))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantization.data_channel_equalization_max_scale: must be a "
          "finite number >= 1, got ",
          m));
    }
    o.data_channel_equalization_max_scale = m;
  }
  if (c.has_z_threshold()) {
    if (!(c.z_threshold() > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantization.z_threshold: must be > 0, got ", c.z_threshold()));
    }
    o.z_threshold = c.z_threshold();
  }
  if (c.has_l_p_value()) {
    if (c.l_p_value() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantization.l_p_value: must be >= 1, got ", c.l_p_value()));
    }
    o.l_p_value = c.l_p_value();
  }
  if (c.has_linear_collapsing()) o.linear_collapsing = c.linear_collapsing();
  if (c.has_residual_collapsing()) {
    o.residual_collapsing = c.residual_collapsing();
  }
  if (c.has_shift_negative_ratio()) {
    if (!(c.shift_negative_ratio() > 0) ||
        !std::isfinite(c.shift_negative_ratio())) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantization.shift_negative_ratio: must be > 0, got ",
                       c.shift_negative_ratio()));
    }
    o.shift_negative_ratio = c.shift_negative_ratio();
  }
  if (c.has_shift_negative_threshold_recalculation()) {
    o.shift_negative_threshold_recalculation =
        c.shift_negative_threshold_recalculation();
  }
  if (c.has_shift_negative_params_search()) {
    o.shift_negative_params_search = c.shift_negative_params_search();
  }
  if (c.has_shift_negative_constant_add()) {
    o.shift_negative_constant_add = c.shift_negative_constant_add();
  }
  if (c.has_concat_threshold_update()) {
    o.concat_threshold_update = c.concat_threshold_update();
  }
  if (c.has_activation_bias_correction()) {
    o.activation_bias_correction = c.activation_bias_correction();
  }
  if (c.has_activation_bias_correction_threshold()) {
    if (!(c.activation_bias_correction_threshold() >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantization.activation_bias_correction_threshold: must be >= 0, "
          "got ",
          c.activation_bias_correction_threshold()));
    }
    o.activation_bias_correction_threshold =
        c.activation_bias_correction_threshold();
  }
  if (c.max_calibration_samples() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantization.max_calibration_samples: must be >= 0, got ",
                     c.max_calibration_samples()));
  }
  o.max_calibration_samples = c.max_calibration_samples();
  return o;
}

}  // namespace quantd
