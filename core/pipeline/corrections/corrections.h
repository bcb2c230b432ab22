// The `correct` stage: every correction the options turn on after mixed
// precision, in MCT's order (softmax shift, concat threshold update, weights
// bias, activation bias). Shift-negative correction is not one of them: it
// runs before mixed precision (shift_negative.h, RunShiftNegativeStage). The
// quality-target search runs both per trial.
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_CORRECTIONS_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_CORRECTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"
#include "core/runtime/cancellation.h"

namespace quantd {

absl::Status ApplyCorrections(JobState* state, const CancellationToken* cancel);

// Whether the options turn shift-negative correction on: MCT's for
// activations, or quantd's for Adds of a constant.
bool ShiftNegativeEnabled(const PtqOptions& options);

// Shift-negative correction when the options turn it on (between parameter
// selection and mixed precision, as MCT 2.3); `shapes` as
// ApplyShiftNegativeCorrection's.
absl::Status RunShiftNegativeStage(
    JobState* state, std::map<std::string, std::vector<int64_t>>* shapes,
    const CancellationToken* cancel);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_CORRECTIONS_H_
