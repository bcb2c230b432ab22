// What GPTQ's stage holds besides the job's model and samples, for
// admission (preflight.cc): the float targets of every block at once
// (rows x out floats each), held from their float pass (the calibration
// pass's activations in flight) on, and then, block by block, the inputs
// cache (quantized_inputs_cache.h) with the widest block's buffers: its
// patches (rows x width floats, held twice while the
// samples' parts are joined) with its batch and evaluation slices
// (doubles) and the trainer's state (12 doubles a weight); width = the kernel's
// input channels x kernel area (channels x 9 for a 3x3 depthwise layer); rows =
// the block's sampled positions, rows_per_block at most.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_GPTQ_MEMORY_H_
#define QUANTD_CORE_PIPELINE_GPTQ_GPTQ_MEMORY_H_

#include <cstdint>

#include "core/graph/graph.h"
#include "core/pipeline/gptq/gptq_options.h"

namespace quantd {

// Rows of a slice of the trainer's evaluation (gptq_block_trainer.cc).
inline constexpr int64_t kGptqEvaluationRows = 256;

// After how many of `blocks` a quality target's GPTQ trial measures its
// model (target_gptq_trial.h): the first quarter, rounded up.
inline int64_t GptqCheckpointBlocks(int64_t blocks) { return (blocks + 3) / 4; }

// GPTQ's stage in its two parts: the float targets of every block, and the
// inputs cache with the widest block's buffers.
struct GptqStageMemory {
  int64_t targets = 0;
  int64_t block = 0;
  // `block` over the blocks before the checkpoint (GptqCheckpointBlocks of
  // the kernels): what a trial that stops there holds.
  int64_t checkpoint_block = 0;
  // The stage's peak: the targets, held from their float pass on, plus the
  // larger of that pass (`passes` = the calibration pass's activations in
  // flight) and a block's own bytes (up to the checkpoint: `checkpoint`).
  int64_t PeakBytes(int64_t passes, bool checkpoint = false) const;
};

// An upper bound over the kernels (Conv, ConvTranspose, Gemm, MatMul with a
// constant weight) that could be GPTQ blocks, for `samples` samples; `model`
// holds the shapes inferred for them (tensors whose shape is unknown count
// as rows_per_block rows).
GptqStageMemory EstimateGptqStageMemory(const Model& model,
                                        const GptqOptions& options,
                                        int64_t samples);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_GPTQ_MEMORY_H_
