// Gathers a strided view of a tensor into a dense row-major output: the core
// of Transpose and Slice (and Expand/Tile through zero strides).
#ifndef QUANTD_CORE_EXECUTOR_STRIDED_COPY_H_
#define QUANTD_CORE_EXECUTOR_STRIDED_COPY_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/executor/kernel.h"

namespace quantd::exec {

// out[o] = in[base + sum_d o_d * strides[d]] for every index o of out_shape.
// Strides are in elements and may be zero or negative.
template <typename T>
void StridedCopy(ThreadPool* pool, const std::vector<int64_t>& out_shape,
                 const std::vector<int64_t>& strides, int64_t base, const T* in,
                 T* out) {
  // Drop size-1 dims and merge dims that are contiguous in the input.
  std::vector<int64_t> dims, st;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 0) return;
    if (out_shape[d] == 1) continue;
    if (!dims.empty() && st.back() == strides[d] * out_shape[d]) {
      dims.back() *= out_shape[d];
      st.back() = strides[d];
    } else {
      dims.push_back(out_shape[d]);
      st.push_back(strides[d]);
    }
  }
  if (dims.empty()) {
    out[0] = in[base];
    return;
  }
  const int64_t inner = dims.back();
  const int64_t step = st.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
  const int64_t grain = std::max<int64_t>(1, (1 << 15) / inner);
  ParallelFor(pool, rows, grain, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      int64_t rem = r, off = base;
      for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
        off += (rem % dims[d]) * st[d];
        rem /= dims[d];
      }
      T* o = out + r * inner;
      const T* i = in + off;
      if (step == 1) {
        std::memcpy(o, i, inner * sizeof(T));
      } else {
        for (int64_t j = 0; j < inner; ++j) o[j] = i[j * step];
      }
    }
  });
}

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_STRIDED_COPY_H_
