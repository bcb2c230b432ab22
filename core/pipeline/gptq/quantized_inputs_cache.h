// GPTQ trains its blocks in node order, each on its input in the fake-quant
// model with every earlier block trained. Computed from the graph inputs
// for every block, those inputs cost about half of the network per block
// (MobileNetV2). A tensor that a block's run computed and that its kernel
// or a later node still reads was made by nodes before the kernel, which
// training this block or a later one never changes: later blocks start from
// it (QuantizedInputsCache) and run only the nodes in between
// (KeepOnlyWhatProduces with the cached names). The same kernels run on the
// same values, so every input, and every trained weight, is the same bits.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_QUANTIZED_INPUTS_CACHE_H_
#define QUANTD_CORE_PIPELINE_GPTQ_QUANTIZED_INPUTS_CACHE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd {

// The cache's budget over all samples: MobileNetV2's 16 GPTQ samples keep
// every cut but the widest early ones (112x112x96, 77 MB for 16); a cut
// that does not fit is recomputed from the graph inputs, as before.
inline constexpr int64_t kGptqInputsCacheBudgetBytes = int64_t{64} << 20;

class QuantizedInputsCache {
 public:
  // `graph`: the job's graph, nodes in topological order.
  QuantizedInputsCache(const Graph& graph, size_t samples,
                       int64_t budget_bytes = kGptqInputsCacheBudgetBytes);

  // Names cached for every sample (the same for all) with their dtypes.
  std::map<std::string, DType> Types() const;
  std::set<std::string> names() const;
  const Tensor& Get(size_t sample, const std::string& name) const {
    return samples_[sample].at(name);
  }
  // Whether a tensor computed for the block of `kernel_node` is worth
  // keeping: the kernel or a later node reads it.
  bool WorthKeeping(const std::string& tensor, int kernel_node) const;
  // After the run for the block of `kernel_node`: produced[s] holds what
  // sample s's run computed that is worth keeping. Entries no node from
  // `kernel_node` on reads are dropped; the largest go first until the
  // rest fits the budget.
  void Update(int kernel_node,
              std::vector<std::map<std::string, Tensor>> produced);
  // Forget everything (a block out of node order).
  void Clear();

 private:
  std::map<std::string, int> last_reader_;  // the last node reading it
  // Every sample holds the same names (Update keeps them so).
  std::vector<std::map<std::string, Tensor>> samples_;
  int64_t budget_;
};

// Keeps only the nodes `tensor` depends on, stopping at the `cached`
// tensors (which become graph inputs of their dtype, shape unknown), and
// makes `tensor` the only graph output, so that a run computes it and
// stops there. Graphs with subgraphs (If, Loop: outer-scope reads) are left
// whole (false).
bool KeepOnlyWhatProduces(const std::string& tensor,
                          const std::map<std::string, DType>& cached, Graph* g);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_QUANTIZED_INPUTS_CACHE_H_
