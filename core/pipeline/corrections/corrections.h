// The `correct` stage: every correction the options turn on, in MCT's
// order (softmax shift, concat threshold update, shift-negative, weights
// bias, activation bias). The quality-target search runs it per trial.
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_CORRECTIONS_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_CORRECTIONS_H_

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"
#include "core/runtime/cancellation.h"

namespace quantd {

absl::Status ApplyCorrections(JobState* state, const CancellationToken* cancel);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_CORRECTIONS_H_
