// Tensor: a dense, row-major, typed n-d array with a shared buffer.
//
// Copies are cheap (the buffer is shared); mutable access copies the buffer
// first when it is shared (copy-on-write), so a graph's initializers can be
// shared by many executor runs and graph copies without surprises. Buffers are
// 64-byte aligned for Eigen.
#ifndef QUANTD_CORE_GRAPH_TENSOR_H_
#define QUANTD_CORE_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace quantd {

// Values equal ONNX TensorProto.DataType (and quantd.v1.DataType).
enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,  // not storable in Tensor; recognised only for messages
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
  kUint4 = 21,
  kInt4 = 22,
};

// Bytes per element; 0 for types a Tensor cannot hold (string, 4-bit,
// undefined).
size_t DTypeSize(DType dtype);
// "float", "int64", ...; "dtype(N)" for unknown values.
std::string DTypeName(DType dtype);
// True for the values above that a Tensor can hold.
bool IsStorableDType(DType dtype);

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kDouble;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUint8;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::kUint16;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::kInt16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::kUint32;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::kUint64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

// Product of dims; -1 if any dim is negative or the product overflows int64.
int64_t NumElements(absl::Span<const int64_t> shape);

// Frees the buffers that freed tensors left for reuse (tensor.cc keeps up to
// 32 MiB of them, process-wide, for executor runs that allocate the same
// sizes sample after sample). For a stage that stops running the executor
// and allocates other sizes for a while (GPTQ's training): the cache would
// otherwise hold sizes nobody asks for on top of the stage's own memory.
void ReleaseCachedTensorBuffers();

class Tensor {
 public:
  Tensor() = default;  // undefined dtype, rank 0, no data

  // Zero-initialised tensor. The caller must have validated dtype and shape
  // (use Tensor::Create for untrusted values).
  Tensor(DType dtype, std::vector<int64_t> shape);

  // Validated constructor: checks dtype is storable, dims non-negative, the
  // element count and byte size below `max_bytes`.
  static absl::StatusOr<Tensor> Create(DType dtype, std::vector<int64_t> shape,
                                       int64_t max_bytes = int64_t{1} << 34);

  // Like the constructor, but the contents are unspecified: for outputs the
  // caller overwrites entirely (zero-filling large buffers costs as much as a
  // cheap kernel). Same preconditions as the constructor.
  static Tensor Uninitialized(DType dtype, std::vector<int64_t> shape);

  // A scalar or 1-D convenience: Tensor::FromVector<float>({1,2,3}, {3}).
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values,
                           std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t num_elements() const { return num_elements_; }
  size_t byte_size() const { return num_elements_ * DTypeSize(dtype_); }
  bool defined() const { return dtype_ != DType::kUndefined; }

  // Typed access; aborts if T does not match dtype() (a broken invariant of
  // ours, never reachable from untrusted input after validation).
  template <typename T>
  const T* data() const {
    CheckType(DTypeOf<T>::value);
    return reinterpret_cast<const T*>(raw());
  }
  template <typename T>
  T* mutable_data() {
    CheckType(DTypeOf<T>::value);
    return reinterpret_cast<T*>(mutable_raw());
  }
  template <typename T>
  absl::Span<const T> span() const {
    return absl::MakeConstSpan(data<T>(), num_elements_);
  }
  template <typename T>
  absl::Span<T> mutable_span() {
    return absl::MakeSpan(mutable_data<T>(), num_elements_);
  }

  const void* raw() const { return buffer_ ? buffer_->data : nullptr; }
  void* mutable_raw();  // copy-on-write

  // Same buffer, new shape with the same element count.
  absl::StatusOr<Tensor> Reshaped(std::vector<int64_t> shape) const;
  // A deep copy that owns its buffer.
  Tensor Clone() const;
  // Element-wise conversion to float (for statistics and comparisons).
  absl::StatusOr<Tensor> CastToFloat() const;

  // True when both share the same buffer object (no copy happened).
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ && buffer_ == other.buffer_;
  }
  // True when no other Tensor holds this buffer: writing through
  // mutable_raw() then copies nothing (the executor's in-place kernels).
  bool HasUniqueBuffer() const { return buffer_ && buffer_.use_count() == 1; }

  std::string DebugString() const;  // "float[1,3,224,224]"

 private:
  struct Buffer {
    Buffer(size_t bytes, bool zero);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    void* data = nullptr;  // 64-byte aligned, inside raw
    void* raw = nullptr;   // the block AllocateBlock returned
    size_t size = 0;
  };
  void CheckType(DType want) const;

  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values,
                          std::vector<int64_t> shape) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  T* out = t.mutable_data<T>();
  for (size_t i = 0;
       i < values.size() && i < static_cast<size_t>(t.num_elements()); ++i) {
    out[i] = values[i];
  }
  return t;
}

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_TENSOR_H_
