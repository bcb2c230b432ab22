#include "core/pipeline/corrections/corrections.h"

#include "core/pipeline/corrections/activation_bias_correction.h"
#include "core/pipeline/corrections/bias_correction.h"
#include "core/pipeline/corrections/post_statistics.h"
#include "core/pipeline/corrections/shift_negative.h"
#include "core/util/status_macros.h"

namespace quantd {

absl::Status ApplyCorrections(JobState* state,
                              const CancellationToken* cancel) {
  const PtqOptions& o = state->options;
  if (o.softmax_shift) RETURN_IF_ERROR(ApplySoftmaxShift(state));
  if (o.concat_threshold_update) {
    RETURN_IF_ERROR(ApplyConcatThresholdUpdate(state));
  }
  if (o.weights_bias_correction) {
    RETURN_IF_ERROR(ApplyBiasCorrection(state, cancel));
  }
  if (o.activation_bias_correction) {
    RETURN_IF_ERROR(ApplyActivationBiasCorrection(state, cancel));
  }
  return absl::OkStatus();
}

bool ShiftNegativeEnabled(const PtqOptions& options) {
  return options.shift_negative_activation_correction ||
         options.shift_negative_constant_add;
}

absl::Status RunShiftNegativeStage(
    JobState* state, std::map<std::string, std::vector<int64_t>>* shapes,
    const CancellationToken* cancel) {
  if (!ShiftNegativeEnabled(state->options)) return absl::OkStatus();
  return ApplyShiftNegativeCorrection(state, shapes, cancel);
}

}  // namespace quantd
