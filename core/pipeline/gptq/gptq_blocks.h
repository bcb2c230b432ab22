// The reconstruction blocks of GPTQ: each kernel node (Conv, Gemm, MatMul
// with a constant 2-D weight) whose kernel is quantized with POWER_OF_TWO,
// SYMMETRIC or UNIFORM, extended by the element-wise activations that follow
// it before any quantization point (Relu, Clip, LeakyRelu, HardSigmoid,
// HardSwish, x * HardSigmoid(x), Sigmoid, Tanh). The block output is the last
// node's output, fake-quantized with that node's activation parameters when
// it has them.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_GPTQ_BLOCKS_H_
#define QUANTD_CORE_PIPELINE_GPTQ_GPTQ_BLOCKS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/executor/window.h"
#include "core/pipeline/job/job_state.h"
#include "core/train/activations.h"
#include "core/train/conv2d.h"

namespace quantd {

struct GptqBlock {
  int kernel_node = -1;
  std::vector<int> nodes;  // kernel node first, then the activations
  std::vector<train::Activation> activations;
  std::string input;      // the kernel's data input
  std::string output;     // the block's output tensor
  int weight_index = -1;  // into plans[kernel_node].weight_results
  // Conv: geometry without the input dims (filled from the data); linear:
  // out / in features and whether the stored weight is [in, out].
  bool is_conv = false;
  train::ConvGeometry conv;
  // A Conv over three or more spatial axes: its window attributes and
  // kernel dims, the geometry computed from the data as the executor
  // computes it (conv holds only out_channels and groups).
  std::optional<exec::WindowAttrs> window_nd;
  std::vector<int64_t> kernel_nd;
  bool transposed_weight = false;  // Gemm transB=0 / MatMul: W is [K, N]
  int64_t out_features = 0, in_features = 0;
  std::string bias;            // initializer ("" = none)
  bool bias_trainable = true;  // false when the bias is quantized itself
  std::optional<ActivationParams> output_quantization;
};

// Blocks in node order; nodes that cannot be trained are left out (with the
// reason in `skipped`, one line each).
std::vector<GptqBlock> FindGptqBlocks(const JobState& state,
                                      std::vector<std::string>* skipped);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_GPTQ_BLOCKS_H_
