#include "core/pipeline/gptq/gptq_memory.h"

#include <algorithm>
#include <vector>

#include "core/pipeline/gptq/quantized_inputs_cache.h"

namespace quantd {
namespace {

// Saturates: a bound above any budget is as good as the exact figure.
constexpr int64_t kCap = int64_t{1} << 50;

// The trainer's state for each weight, in double (gptq_block_trainer.cc):
// the float weights, soft rounding's V with its gradient, sigmoid and two
// Adam moments, a step's four weight buffers (quantized, in both layouts,
// and its gradient in both) and the best weights kept: 12 (heaptrack on
// oww_hey_jarvis: 11 buffers of its widest kernel's size).
constexpr int64_t kTrainerBytesPerWeight = 12 * 8;

int64_t Mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > kCap / b ? kCap : a * b;
}

// -1 when unknown (or past int64).
int64_t Elements(const ValueInfo& info) {
  return info.has_shape ? NumElements(info.shape) : -1;
}

struct KernelSize {
  int64_t out = 0, width = 0;  // outputs, patch width
  int64_t weights = 0;         // the kernel's elements
};

// A kernel node's outputs and patch width from its constant weight; zeros
// for any other node.
KernelSize SizeOf(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return {};
  const Tensor* w = g.FindInitializer(n.inputs[1]);
  if (w == nullptr || w->rank() < 2) return {};
  int64_t area = 1;
  for (int d = 2; d < w->rank(); ++d) area = Mul(area, w->dim(d));
  const int64_t group = std::max<int64_t>(1, n.GetInt("group", 1));
  const int64_t weights = w->num_elements();
  if (n.op_type == "Conv") {
    return {w->dim(0), Mul(Mul(w->dim(1), group), area), weights};
  }
  if (n.op_type == "ConvTranspose") {
    return {Mul(w->dim(1), group), Mul(w->dim(0), area), weights};
  }
  if (n.op_type == "Gemm" || n.op_type == "MatMul") {
    // Either layout: the larger dimension bounds both.
    const int64_t m = std::max(w->dim(0), w->dim(1));
    return {m, m, weights};
  }
  return {};
}

}  // namespace

int64_t GptqStageMemory::PeakBytes(int64_t passes, bool checkpoint) const {
  return std::min(
      kCap, targets + std::max(passes, checkpoint ? checkpoint_block : block));
}

GptqStageMemory EstimateGptqStageMemory(const Model& model,
                                        const GptqOptions& options,
                                        int64_t samples) {
  const Graph& g = model.graph;
  const int64_t n = std::clamp<int64_t>(samples, 1, 1 << 20);
  const int64_t max_rows =
      std::clamp<int64_t>(options.rows_per_block, 1, int64_t{1} << 30);
  const int64_t batch = std::clamp<int64_t>(options.batch_rows, 1, max_rows);
  int64_t targets = 0, largest = 0;
  std::vector<int64_t> own;  // each block's buffers, in the blocks' order
  for (const auto& [name, info] : g.value_info) {
    if (!g.IsConstant(name)) largest = std::max(largest, Elements(info));
  }
  for (const Node& node : g.nodes) {
    const KernelSize k = SizeOf(g, node);
    if (k.out <= 0 || k.width <= 0 || node.outputs.empty()) continue;
    // Sampled positions: every output position of every sample, at most
    // rows_per_block (the maximum when the shape is unknown).
    int64_t rows = max_rows;
    auto it = g.value_info.find(node.outputs[0]);
    if (it != g.value_info.end()) {
      const int64_t e = Elements(it->second);
      if (e > 0)
        rows = std::min(max_rows, Mul(n, std::max<int64_t>(1, e / k.out)));
    }
    targets = std::min(kCap, targets + Mul(Mul(rows, k.out), 4));
    const int64_t eval = std::min(rows, kGptqEvaluationRows);
    const int64_t slices = Mul(std::min(rows, batch) + eval,
                               std::min(kCap / 64, k.width + 4 * k.out));
    const int64_t trainer = Mul(k.weights, kTrainerBytesPerWeight);
    own.push_back(std::min(kCap, Mul(Mul(2 * rows, k.width), 4) +
                                     Mul(Mul(rows, k.out), 4) + Mul(slices, 8) +
                                     trainer));
  }
  const auto widest_of = [&](size_t n) {
    return own.empty() ? int64_t{0}
                       : *std::max_element(own.begin(), own.begin() + n);
  };
  const int64_t widest = widest_of(own.size());
  const int64_t checkpoint_widest = widest_of(static_cast<size_t>(
      GptqCheckpointBlocks(static_cast<int64_t>(own.size()))));
  // The cache holds the tensors live at a block's kernel: two of the
  // largest activation a sample, within its budget.
  const int64_t cache =
      std::min(kGptqInputsCacheBudgetBytes,
               Mul(Mul(2 * n, std::max<int64_t>(largest, 0)), 4));
  // The targets' float pass runs before any block (no cache yet); each
  // block then holds the cache and its own buffers (its collecting pass,
  // cut at the cache, is smaller than the whole pass).
  return {targets, std::min(kCap, cache + widest),
          std::min(kCap, cache + checkpoint_widest)};
}

}  // namespace quantd
