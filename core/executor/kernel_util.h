// Shared helpers for kernels: dtype dispatch, axes, int lists from tensors.
#ifndef QUANTD_CORE_EXECUTOR_KERNEL_UTIL_H_
#define QUANTD_CORE_EXECUTOR_KERNEL_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd::exec {

template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the C++ type of dtype; INVALID_ARGUMENT for dtypes
// outside the set. f returns void or absl::Status.
template <typename F>
absl::Status CallTyped(F&& f, auto tag) {
  if constexpr (std::is_void_v<decltype(f(tag))>) {
    f(tag);
    return absl::OkStatus();
  } else {
    return f(tag);
  }
}

absl::Status UnsupportedDType(absl::string_view what, DType dtype);

// float, double.
template <typename F>
absl::Status DispatchFloat(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat:
      return CallTyped(f, Tag<float>{});
    case DType::kDouble:
      return CallTyped(f, Tag<double>{});
    default:
      return UnsupportedDType("floating-point", dtype);
  }
}

// Every numeric type except bool.
template <typename F>
absl::Status DispatchNumeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat:
      return CallTyped(f, Tag<float>{});
    case DType::kDouble:
      return CallTyped(f, Tag<double>{});
    case DType::kInt8:
      return CallTyped(f, Tag<int8_t>{});
    case DType::kUint8:
      return CallTyped(f, Tag<uint8_t>{});
    case DType::kInt16:
      return CallTyped(f, Tag<int16_t>{});
    case DType::kUint16:
      return CallTyped(f, Tag<uint16_t>{});
    case DType::kInt32:
      return CallTyped(f, Tag<int32_t>{});
    case DType::kUint32:
      return CallTyped(f, Tag<uint32_t>{});
    case DType::kInt64:
      return CallTyped(f, Tag<int64_t>{});
    case DType::kUint64:
      return CallTyped(f, Tag<uint64_t>{});
    default:
      return UnsupportedDType("numeric", dtype);
  }
}

// uint8, uint16, uint32, uint64.
template <typename F>
absl::Status DispatchUnsigned(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kUint8:
      return CallTyped(f, Tag<uint8_t>{});
    case DType::kUint16:
      return CallTyped(f, Tag<uint16_t>{});
    case DType::kUint32:
      return CallTyped(f, Tag<uint32_t>{});
    case DType::kUint64:
      return CallTyped(f, Tag<uint64_t>{});
    default:
      return UnsupportedDType("unsigned integer", dtype);
  }
}

// Numeric types and bool.
template <typename F>
absl::Status DispatchAll(DType dtype, F&& f) {
  if (dtype == DType::kBool) return CallTyped(f, Tag<bool>{});
  return DispatchNumeric(dtype, f);
}

// Copies elements by byte width only (layout ops: any storable dtype,
// including float16).
template <typename F>
absl::Status DispatchBySize(DType dtype, F&& f) {
  switch (DTypeSize(dtype)) {
    case 1:
      return CallTyped(f, Tag<uint8_t>{});
    case 2:
      return CallTyped(f, Tag<uint16_t>{});
    case 4:
      return CallTyped(f, Tag<uint32_t>{});
    case 8:
      return CallTyped(f, Tag<uint64_t>{});
    default:
      return UnsupportedDType("storable", dtype);
  }
}

// Raw element pointers for DispatchBySize kernels.
template <typename T>
const T* RawAs(const Tensor& t) {
  return static_cast<const T*>(t.raw());
}
template <typename T>
T* MutableRawAs(Tensor& t) {
  return static_cast<T*>(t.mutable_raw());
}

// axis in [-rank, rank) -> [0, rank).
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank,
                                      absl::string_view what = "axis");
// The values of a 0-D/1-D int32/int64 tensor.
absl::StatusOr<std::vector<int64_t>> ReadInts(const Tensor& t,
                                              absl::string_view what);
// A scalar (or one-element) numeric tensor as double.
absl::StatusOr<double> ReadScalar(const Tensor& t, absl::string_view what);

std::vector<int64_t> StridesOf(const std::vector<int64_t>& shape);
std::string ShapeString(const std::vector<int64_t>& shape);

// numpy multidirectional broadcast of two shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastShape(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Iterates an output shape and up to 3 right-aligned broadcast inputs as rows
// of the innermost (collapsed) dimension. For each row:
//   fn(out_offset, in_offsets[3], count); input i advances by inner_step[i]
// (0 or 1) per element within the row.
class BroadcastPlan {
 public:
  BroadcastPlan(const std::vector<int64_t>& out_shape,
                const std::vector<std::vector<int64_t>>& in_shapes);
  int64_t rows() const { return rows_; }
  int64_t inner() const { return inner_; }
  int64_t inner_step(int i) const { return inner_step_[i]; }
  // Offsets of the first element of row r.
  void RowOffsets(int64_t r, int64_t* in_offsets) const;

 private:
  int n_;
  std::vector<int64_t> outer_dims_;  // collapsed, excluding inner
  std::vector<std::vector<int64_t>> outer_strides_;  // per input
  int64_t rows_ = 1;
  int64_t inner_ = 1;
  int64_t inner_step_[3] = {0, 0, 0};
};

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_KERNEL_UTIL_H_
