// NumPy broadcasting as strides, for the backward passes of element-wise ops:
// every operand is addressed through strides over the output's shape, with
// stride 0 on the dimensions it is broadcast along.
#ifndef QUANTD_CORE_AUTODIFF_BROADCAST_H_
#define QUANTD_CORE_AUTODIFF_BROADCAST_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace quantd::autodiff::internal {

// Strides of `shape` (row-major) viewed as broadcast to `out`: right-aligned,
// 0 where shape has 1 (or no) dimension. Precondition: shape broadcasts to out.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out);

// Calls row(out_offset, offsets, length) for each innermost row of `out`;
// offsets[k] is operand k's element offset of the row's first element (its
// step along the row is strides[k].back()).
void ForEachRow(
    const std::vector<int64_t>& out,
    const std::vector<std::vector<int64_t>>& strides,
    const std::function<void(int64_t, const int64_t*, int64_t)>& row);

}  // namespace quantd::autodiff::internal

#endif  // QUANTD_CORE_AUTODIFF_BROADCAST_H_
