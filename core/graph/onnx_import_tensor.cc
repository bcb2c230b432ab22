// ONNX TensorProto -> Tensor: size checks against the limits before any
// allocation, then the copy (4-bit values unpacked). The rest of the import
// is in onnx_import.cc.
#include "core/graph/internal/onnx_import_tensor.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/onnx_import.h"
#include "core/graph/validation.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

template <typename T>
void CopyFromInt32(const onnx::TensorProto& proto, Tensor* t) {
  T* out = static_cast<T*>(t->mutable_raw());
  for (int i = 0; i < proto.int32_data_size(); ++i) {
    out[i] = static_cast<T>(proto.int32_data(i));
  }
}

template <typename Src, typename Dst>
void CopyRepeated(const google::protobuf::RepeatedField<Src>& field,
                  Tensor* t) {
  Dst* out = static_cast<Dst*>(t->mutable_raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field[i]);
}

// Unpacks two 4-bit values per byte, first element in the low nibble.
void UnpackNibbles(const uint8_t* packed, bool is_signed, int64_t n,
                   Tensor* t) {
  auto* out = static_cast<uint8_t*>(t->mutable_raw());
  for (int64_t i = 0; i < n; ++i) {
    uint8_t nibble = (packed[i / 2] >> ((i % 2) * 4)) & 0x0f;
    if (is_signed) {
      const int8_t v = static_cast<int8_t>(nibble << 4) >> 4;  // sign-extend
      std::memcpy(&out[i], &v, 1);
    } else {
      out[i] = nibble;
    }
  }
}

absl::Status TypeError(const std::string& where, int64_t count,
                       int64_t expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": holds ", count, " values but its dims need ", expected));
}

// Where a TensorProto keeps its elements: raw_data or one typed field.
enum class Source { kRaw, kFloat, kInt32, kInt64, kDouble, kUint64 };

// Checks the data that is present against the claimed size (n elements of
// dtype, elem bytes each once stored) and tells where it is.
absl::StatusOr<Source> CheckTensorData(const onnx::TensorProto& proto,
                                       DType dtype, bool sub_byte, int64_t n,
                                       int64_t elem, const std::string& where) {
  Source source;
  int64_t count = 0;
  int64_t expected = n;
  if (proto.has_raw_data()) {
    source = Source::kRaw;
    count = static_cast<int64_t>(proto.raw_data().size());
    expected = sub_byte ? (n + 1) / 2 : n * elem;
    if (count != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": raw_data has ", count, " bytes but dims ",
                       ShapeString(proto.dims()), " of ", DTypeName(dtype),
                       " need ", expected));
    }
  } else {
    switch (dtype) {
      case DType::kFloat:
        source = Source::kFloat;
        count = proto.float_data_size();
        break;
      case DType::kInt32:
      case DType::kInt16:
      case DType::kInt8:
      case DType::kUint16:
      case DType::kUint8:
      case DType::kBool:
      case DType::kFloat16:
      case DType::kBfloat16:
        source = Source::kInt32;
        count = proto.int32_data_size();
        break;
      case DType::kInt4:
      case DType::kUint4:
        source = Source::kInt32;
        count = proto.int32_data_size();
        expected = (n + 1) / 2;
        break;
      case DType::kInt64:
        source = Source::kInt64;
        count = proto.int64_data_size();
        break;
      case DType::kDouble:
        source = Source::kDouble;
        count = proto.double_data_size();
        break;
      case DType::kUint32:
      case DType::kUint64:
        source = Source::kUint64;
        count = proto.uint64_data_size();
        break;
      default:
        return absl::UnimplementedError(absl::StrCat(
            where, ": element type ", DTypeName(dtype), " is not supported"));
    }
    if (count != expected) return TypeError(where, count, expected);
  }
  return source;
}

// Copies the checked data into t (n elements; 4-bit values unpacked).
void CopyTensorData(const onnx::TensorProto& proto, DType dtype, bool sub_byte,
                    int64_t n, Source source, Tensor& t) {
  if (n == 0) {
    // nothing to copy
  } else if (sub_byte) {
    if (source == Source::kRaw) {
      UnpackNibbles(reinterpret_cast<const uint8_t*>(proto.raw_data().data()),
                    dtype == DType::kInt4, n, &t);
    } else {
      std::vector<uint8_t> packed(proto.int32_data_size());
      for (int i = 0; i < proto.int32_data_size(); ++i) {
        packed[i] = static_cast<uint8_t>(proto.int32_data(i));
      }
      UnpackNibbles(packed.data(), dtype == DType::kInt4, n, &t);
    }
  } else {
    switch (source) {
      case Source::kRaw:
        // ONNX raw_data is little-endian, as is every platform we build for.
        std::memcpy(t.mutable_raw(), proto.raw_data().data(),
                    proto.raw_data().size());
        break;
      case Source::kFloat:
        CopyRepeated<float, float>(proto.float_data(), &t);
        break;
      case Source::kInt32:
        switch (dtype) {
          case DType::kInt32:
            CopyFromInt32<int32_t>(proto, &t);
            break;
          case DType::kInt16:
            CopyFromInt32<int16_t>(proto, &t);
            break;
          case DType::kInt8:
            CopyFromInt32<int8_t>(proto, &t);
            break;
          case DType::kUint8:
            CopyFromInt32<uint8_t>(proto, &t);
            break;
          case DType::kBool: {
            auto* out = static_cast<uint8_t*>(t.mutable_raw());
            for (int i = 0; i < proto.int32_data_size(); ++i) {
              out[i] = proto.int32_data(i) != 0 ? 1 : 0;
            }
            break;
          }
          default:  // uint16, float16, bfloat16: 16-bit patterns
            CopyFromInt32<uint16_t>(proto, &t);
            break;
        }
        break;
      case Source::kInt64:
        CopyRepeated<int64_t, int64_t>(proto.int64_data(), &t);
        break;
      case Source::kDouble:
        CopyRepeated<double, double>(proto.double_data(), &t);
        break;
      case Source::kUint64:
        if (dtype == DType::kUint32) {
          CopyRepeated<uint64_t, uint32_t>(proto.uint64_data(), &t);
        } else {
          CopyRepeated<uint64_t, uint64_t>(proto.uint64_data(), &t);
        }
        break;
    }
  }
}

}  // namespace

namespace onnx_import_internal {

absl::StatusOr<Tensor> TensorFromProtoImpl(const onnx::TensorProto& proto,
                                           int64_t max_tensor_bytes,
                                           DType* sub_byte_type,
                                           const std::string& where) {
  if (sub_byte_type != nullptr) *sub_byte_type = DType::kUndefined;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL ||
      proto.external_data_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        where,
        ": external data is not supported (embed the weights in the model; "
        "models up to 2 GiB fit in one ModelProto)"));
  }
  if (proto.has_segment()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": segmented tensors are not supported"));
  }
  const int32_t type = proto.data_type();
  if (!IsKnownDType(type) || type == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": unknown data_type ", type));
  }
  const DType dtype = static_cast<DType>(type);
  const bool sub_byte = dtype == DType::kInt4 || dtype == DType::kUint4;
  if (!sub_byte && !IsStorableDType(dtype)) {
    return absl::UnimplementedError(absl::StrCat(
        where, ": element type ", DTypeName(dtype), " is not supported"));
  }
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": negative dimension in dims ", ShapeString(proto.dims())));
    }
  }
  const int64_t n = NumElements(shape);
  if (n < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": dims ", ShapeString(proto.dims()), " overflow int64"));
  }
  const DType storage =
      sub_byte ? (dtype == DType::kInt4 ? DType::kInt8 : DType::kUint8) : dtype;
  const int64_t elem = static_cast<int64_t>(DTypeSize(storage));
  if (n > max_tensor_bytes / elem) {
    return absl::ResourceExhaustedError(absl::StrCat(
        where, ": dims ", ShapeString(proto.dims()), " (", DTypeName(dtype),
        ") exceed the tensor limit of ", max_tensor_bytes, " bytes"));
  }

  // Check the data that is present against the claimed size before
  // allocating anything.
  ASSIGN_OR_RETURN(const Source source,
                   CheckTensorData(proto, dtype, sub_byte, n, elem, where));
  Tensor t(storage, std::move(shape));
  CopyTensorData(proto, dtype, sub_byte, n, source, t);
  if (sub_byte && sub_byte_type != nullptr) *sub_byte_type = dtype;
  return t;
}

}  // namespace onnx_import_internal

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                       int64_t max_tensor_bytes,
                                       DType* sub_byte_type) {
  const std::string where = proto.name().empty()
                                ? std::string("tensor")
                                : absl::StrCat("tensor '", proto.name(), "'");
  return onnx_import_internal::TensorFromProtoImpl(proto, max_tensor_bytes,
                                                   sub_byte_type, where);
}

absl::StatusOr<Tensor> ImportTensorProto(absl::string_view bytes,
                                         int64_t max_tensor_bytes) {
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("bytes are not a valid ONNX TensorProto");
  }
  return TensorFromProto(proto, max_tensor_bytes);
}

}  // namespace quantd
