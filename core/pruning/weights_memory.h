// The float weights memory of a model, and of the model with fewer channels
// in its prunable sections (MCT's MemoryCalculator, without SIMD padding):
// every element of a floating-point initializer counts 4 bytes (MCT's
// FP32_BYTES_PER_PARAMETER), whatever its stored type.
#ifndef QUANTD_CORE_PRUNING_WEIGHTS_MEMORY_H_
#define QUANTD_CORE_PRUNING_WEIGHTS_MEMORY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/pruning/pruning_section.h"

namespace quantd::pruning {

inline constexpr int64_t kBytesPerParameter = 4;

// Bytes of every floating-point initializer of `graph`.
int64_t FloatWeightsBytes(const Graph& graph);

class PrunedWeightsMemory {
 public:
  PrunedWeightsMemory(const Graph& graph,
                      const std::vector<PruningSection>& sections);

  int64_t unpruned_bytes() const { return total_bytes_; }
  // The bytes with `kept[s]` channels in section s (one entry per section).
  int64_t Bytes(const std::vector<int64_t>& kept) const;

 private:
  struct Shaped {
    std::vector<int64_t> dims;
    std::vector<std::pair<int, int>> axis_section;  // (axis, section)
  };
  int64_t total_bytes_ = 0;
  std::vector<Shaped> tensors_;  // the tensors some section resizes
};

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_WEIGHTS_MEMORY_H_
