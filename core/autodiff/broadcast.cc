#include "core/autodiff/broadcast.h"

namespace quantd::autodiff::internal {

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  const int64_t offset = static_cast<int64_t>(out.size() - shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) strides[d + offset] = stride;
    stride *= shape[d];
  }
  return strides;
}

void ForEachRow(
    const std::vector<int64_t>& out,
    const std::vector<std::vector<int64_t>>& strides,
    const std::function<void(int64_t, const int64_t*, int64_t)>& row) {
  const size_t k = strides.size();
  std::vector<int64_t> offsets(k, 0);
  if (out.empty()) {
    row(0, offsets.data(), 1);
    return;
  }
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  const int rank = static_cast<int>(out.size());
  const int64_t length = out.back();
  std::vector<int64_t> index(rank, 0);
  for (int64_t base = 0; base < total; base += length) {
    row(base, offsets.data(), length);
    // Odometer over the outer dimensions.
    for (int d = rank - 2; d >= 0; --d) {
      ++index[d];
      for (size_t o = 0; o < k; ++o) offsets[o] += strides[o][d];
      if (index[d] < out[d]) break;
      for (size_t o = 0; o < k; ++o) offsets[o] -= strides[o][d] * out[d];
      index[d] = 0;
    }
  }
}

}  // namespace quantd::autodiff::internal
