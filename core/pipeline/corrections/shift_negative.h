// MCT's shift-negative correction.
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_SHIFT_NEGATIVE_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_SHIFT_NEGATIVE_H_

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"
#include "core/runtime/cancellation.h"

namespace quantd {

// shift_negative.cc: MCT's shift-negative correction after parameter
// selection (inserts an Add after each corrected activation; the next
// linear node's bias absorbs the shift). Cases it cannot handle (a padded
// Conv after the activation, several consumers, ...) are left as they are
// and listed in state->warnings. A cancelled `cancel` stops the search
// between candidates and grid points and returns its status (the job then
// discards the state).
absl::Status ApplyShiftNegativeCorrection(
    JobState* state, const CancellationToken* cancel = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_SHIFT_NEGATIVE_H_
