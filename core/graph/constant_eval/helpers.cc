// Helpers shared by the constant evaluator's families.
#include "core/graph/constant_eval/helpers.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/constant_eval.h"

namespace quantd {
namespace constant_eval_internal {

bool IsFloating(DType t) { return t == DType::kFloat || t == DType::kDouble; }

bool IsNumeric(DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kInt8:
    case DType::kUint8:
    case DType::kInt16:
    case DType::kUint16:
    case DType::kInt32:
    case DType::kUint32:
    case DType::kInt64:
    case DType::kUint64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}
int64_t SafeToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

void SetInt(Tensor* t, int64_t i, int64_t v) {
  void* p = t->mutable_raw();
  switch (t->dtype()) {
    case DType::kFloat:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::kDouble:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    case DType::kInt8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case DType::kUint8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case DType::kBool:
      static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
      break;
    case DType::kInt16:
      static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v);
      break;
    case DType::kUint16:
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
      break;
    case DType::kInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::kUint32:
      static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      break;
    case DType::kInt64:
      static_cast<int64_t*>(p)[i] = v;
      break;
    case DType::kUint64:
      static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      break;
    default:
      break;
  }
}

void SetDouble(Tensor* t, int64_t i, double v) {
  switch (t->dtype()) {
    case DType::kFloat:
      static_cast<float*>(t->mutable_raw())[i] = static_cast<float>(v);
      break;
    case DType::kDouble:
      static_cast<double*>(t->mutable_raw())[i] = v;
      break;
    case DType::kBool:
      static_cast<uint8_t*>(t->mutable_raw())[i] = v != 0 ? 1 : 0;
      break;
    default:
      SetInt(t, i, SafeToInt64(v));
  }
}

absl::Status NodeError(const Node& node, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(node.Label(), ": ", what));
}

absl::StatusOr<Tensor> NewTensor(const Node& node, DType dtype, Shape shape,
                                 int64_t max_elements) {
  const int64_t n = NumElements(shape);
  if (n < 0 || n > max_elements) {
    return absl::ResourceExhaustedError(
        absl::StrCat(node.Label(), ": constant output [",
                     absl::StrJoin(shape, ","), "] is too large to evaluate"));
  }
  return Tensor(dtype, std::move(shape));
}

absl::StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis,
                                      int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return NodeError(
        node, absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    s[i] = s[i + 1] * shape[i + 1];
  }
  return s;
}
absl::StatusOr<std::vector<int64_t>> AxesFrom(
    const Node& node, absl::Span<const Tensor* const> in, size_t input_index,
    bool from_input) {
  if (from_input) {
    if (input_index < in.size() && in[input_index] != nullptr) {
      return ToInt64Vector(*in[input_index]);
    }
    return std::vector<int64_t>{};
  }
  return node.GetInts("axes");
}

}  // namespace constant_eval_internal
}  // namespace quantd
