#include "core/pruning/apply_pruning.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace quantd::pruning {
namespace {

// `t` with only the slices `keep` (ascending) along `axis`.
Tensor TakeAlongAxis(const Tensor& t, int axis,
                     const std::vector<int64_t>& keep) {
  std::vector<int64_t> shape = t.shape();
  const int64_t channels = shape[axis];
  shape[axis] = static_cast<int64_t>(keep.size());
  Tensor out(t.dtype(), shape);
  const size_t elem = DTypeSize(t.dtype());
  int64_t inner = 1;
  for (int d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const int64_t outer =
      channels == 0 ? 0 : t.num_elements() / (channels * inner);
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.mutable_raw());
  const size_t block = inner * elem;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < keep.size(); ++k) {
      std::memcpy(dst + (o * keep.size() + k) * block,
                  src + (o * channels + keep[k]) * block, block);
    }
  }
  return out;
}

}  // namespace

absl::Status ApplyPruning(const std::vector<PruningSection>& sections,
                          const std::vector<std::vector<int64_t>>& kept,
                          Model* model) {
  Graph& g = model->graph;
  for (size_t s = 0; s < sections.size(); ++s) {
    if (static_cast<int64_t>(kept[s].size()) == sections[s].channels) continue;
    for (const ChannelTensor& ct : sections[s].tensors) {
      auto it = g.initializers.find(ct.initializer);
      if (it == g.initializers.end() ||
          it->second.dim(ct.axis) != sections[s].channels) {
        return absl::InternalError(absl::StrCat(
            "pruning: constant '", ct.initializer, "' changed under the pass"));
      }
      it->second = TakeAlongAxis(it->second, ct.axis, kept[s]);
    }
    for (const std::string& v : sections[s].chain_values) {
      g.value_info.erase(v);
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd::pruning
