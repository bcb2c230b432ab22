// MCT's post-statistics substitutions.
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_POST_STATISTICS_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_POST_STATISTICS_H_

#include "absl/status/status.h"
#include "core/pipeline/job/job_state.h"

namespace quantd {

// post_statistics.cc: MCT's post-statistics substitutions, after parameter
// selection. Softmax shift: a linear node feeding Softmax gets -(max+min)/2
// of its observed output added to its bias; its statistics move by the same
// amount and its activation is selected again. Concat threshold update:
// every input of a Concat whose producer feeds only the Concat takes the
// Concat's threshold (threshold methods only). Each change is listed in
// state->warnings.
absl::Status ApplySoftmaxShift(JobState* state);
absl::Status ApplyConcatThresholdUpdate(JobState* state);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_POST_STATISTICS_H_
