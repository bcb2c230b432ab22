// What GPTQ's stage holds besides the job's model and samples, for
// admission (preflight.cc): the float targets of every block at once
// (rows x out floats each), held from their float pass (the calibration
// pass's activations in flight) on, and then, block by block, the inputs
// cache (quantized_inputs_cache.h) with the widest block's buffers: its
// patches (rows x width floats, held twice while the
// samples' parts are joined) with its batch and evaluation slices
// (doubles); width = the kernel's input channels x kernel area (channels
// x 9 for a 3x3 depthwise layer); rows = the block's sampled positions,
// rows_per_block at most.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_GPTQ_MEMORY_H_
#define QUANTD_CORE_PIPELINE_GPTQ_GPTQ_MEMORY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/pipeline/gptq/gptq_options.h"

namespace quantd {

// Rows of a slice of the trainer's evaluation (gptq_block_trainer.cc).
inline constexpr int64_t kGptqEvaluationRows = 256;

// An upper bound over the kernels (Conv, ConvTranspose, Gemm, MatMul with a
// constant weight) that could be GPTQ blocks, for `samples` samples of the
// given input shapes (declared shapes when empty or when inference fails);
// `passes` = the calibration pass's activations in flight.
int64_t EstimateGptqStageBytes(
    const Model& model, const GptqOptions& options,
    const std::map<std::string, std::vector<int64_t>>& input_shapes,
    int64_t samples, int64_t passes);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_GPTQ_MEMORY_H_
