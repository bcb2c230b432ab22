// The quality target's GPTQ trial (docs/quality_target.md, step (d)): when
// the search (and its channel equalization trial) leaves the target
// missed, GPTQ on the chosen configuration, kept only when it raises the
// figure.
#ifndef QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_GPTQ_TRIAL_H_
#define QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_GPTQ_TRIAL_H_

#include "absl/status/status.h"
#include "core/pipeline/gptq/gptq_memory.h"  // GptqCheckpointBlocks
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/quality_target/quality_target.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// GPTQ (inputs.spec->gptq) on a copy of `state`, measured by the search's meter
// (`outcome->meter`); kept (state replaced, report updated) when the figure
// rises. The model with the first quarter of the blocks trained (and PTQ
// weights for the rest) is measured too: a trial that is below its
// starting figure there stops (GptqCheckpointBlocks); one that goes on
// reaches JobMemoryStage::kTargetGptqRest. A model GPTQ cannot
// train gets a step saying why, and the job goes on.
absl::Status TryGptqForTarget(const QualityTargetInputs& inputs,
                              JobState* state, QualityTargetOutcome* outcome,
                              ThreadPool* pool, const CancellationToken* cancel,
                              ProgressSink* progress);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_GPTQ_TRIAL_H_
