// GPTQ (MCT §5.3, block-wise): after PTQ parameter selection and the
// corrections, each reconstruction block (gptq_blocks.h) in node order is
// fitted on the calibration samples: the float model gives the block's
// target output at sampled output positions, the fake-quant model as
// trained so far gives the block's quantized inputs there, and the block's
// rounding (and bias) is learned (gptq_block_trainer.h). The learned
// integer weights and parameters are written into the plans (and the bias
// into state->model), so the QuantizedGraph and the QDQ export carry them;
// a block whose output error does not improve keeps its PTQ weights.
// Deterministic for a given pool size-independent input; reports progress
// per block and epoch; polls the cancellation token every step.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_GPTQ_STAGE_H_
#define QUANTD_CORE_PIPELINE_GPTQ_GPTQ_STAGE_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "core/executor/executor.h"
#include "core/pipeline/export/export_options.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// Called after each block with the number of blocks done and the total;
// `state` then holds the blocks trained so far and PTQ weights for the
// rest, a whole model. Returning false stops the stage there.
using GptqAfterBlock = std::function<absl::StatusOr<bool>(
    size_t blocks_done, size_t blocks_total, const JobState& state)>;

// `float_exec` runs the float model (before corrections) the targets come
// from; results per block go to state->gptq_layers.
absl::Status RunGptq(const GptqOptions& options, const Executor& float_exec,
                     const std::vector<SampleFeeds>& samples,
                     const ExportOptions& export_options, JobState* state,
                     ThreadPool* pool, const CancellationToken* cancel,
                     ProgressSink* progress,
                     const GptqAfterBlock& after_block = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_GPTQ_STAGE_H_
