// Trains one GPTQ block on sampled output positions: the student (the
// block with trainable weight quantizer, trainable bias and frozen output
// activation quantizer, gradually switched on) on the quantized model's
// inputs is fitted to the float block's outputs on float inputs, with Adam
// and the soft-rounding regularizer. Returns the hard-rounded weights and the
// block's output SQNR with the PTQ weights and with the trained ones.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_GPTQ_BLOCK_TRAINER_H_
#define QUANTD_CORE_PIPELINE_GPTQ_GPTQ_BLOCK_TRAINER_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/tensor.h"
#include "core/pipeline/gptq/gptq_blocks.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"
#include "core/train/grouped_linear.h"
#include "core/train/weight_quantizers.h"

namespace quantd {

// Float32 values (the quantized model's activations and the float block's
// outputs), held as float and widened to double batch by batch: exact, and
// half the memory (a depthwise block's patches are rows x channels x 9).
struct GptqBlockData {
  train::LinearShape shape;    // rows = sampled positions
  std::vector<float> patches;  // [rows, groups * in], quantized inputs
  std::vector<float> target;   // [rows, out], float block outputs
};

struct GptqBlockResult {
  train::FixedWeights weights;  // in the stored layout of the kernel
  std::vector<double> bias;     // trained bias (one per output)
  double sqnr_before_db = 0, sqnr_after_db = 0;
  int steps = 0;
};

// `weight`: the float kernel as stored; `ptq_weight`: its PTQ result (the
// starting grid and the "before" figure); `bias`: the current bias (zeros if
// the node has none). on_epoch(e) is called after each epoch. Each step's
// products and per-weight updates split over `pool` (null: one thread)
// without changing a bit of the result.
absl::StatusOr<GptqBlockResult> TrainGptqBlock(
    const GptqBlock& block, const GptqBlockData& data, const Tensor& weight,
    const WeightParams& ptq_weight, std::vector<double> bias,
    const GptqOptions& options, ThreadPool* pool,
    const CancellationToken* cancel, const std::function<void(int)>& on_epoch);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_GPTQ_BLOCK_TRAINER_H_
