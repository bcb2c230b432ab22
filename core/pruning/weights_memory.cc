#include "core/pruning/weights_memory.h"

#include <map>

namespace quantd::pruning {
namespace {

bool IsFloatType(DType t) {
  return t == DType::kFloat || t == DType::kFloat16 || t == DType::kBfloat16 ||
         t == DType::kDouble;
}

}  // namespace

int64_t FloatWeightsBytes(const Graph& graph) {
  int64_t elements = 0;
  for (const auto& [name, t] : graph.initializers) {
    if (IsFloatType(t.dtype())) elements += t.num_elements();
  }
  return elements * kBytesPerParameter;
}

PrunedWeightsMemory::PrunedWeightsMemory(
    const Graph& graph, const std::vector<PruningSection>& sections)
    : total_bytes_(FloatWeightsBytes(graph)) {
  std::map<std::string, size_t> slot;
  for (int s = 0; s < static_cast<int>(sections.size()); ++s) {
    for (const ChannelTensor& ct : sections[s].tensors) {
      auto [it, added] = slot.emplace(ct.initializer, tensors_.size());
      if (added) {
        tensors_.push_back(
            {graph.FindInitializer(ct.initializer)->shape(), {}});
      }
      tensors_[it->second].axis_section.emplace_back(ct.axis, s);
    }
  }
}

int64_t PrunedWeightsMemory::Bytes(const std::vector<int64_t>& kept) const {
  int64_t removed = 0;
  for (const Shaped& t : tensors_) {
    std::vector<int64_t> dims = t.dims;
    int64_t before = 1;
    for (int64_t d : dims) before *= d;
    for (const auto& [axis, s] : t.axis_section) dims[axis] = kept[s];
    int64_t after = 1;
    for (int64_t d : dims) after *= d;
    removed += before - after;
  }
  return total_bytes_ - removed * kBytesPerParameter;
}

}  // namespace quantd::pruning
