// Constant evaluation of ONNX generator ops (onnx/defs/generator): Range,
// ConstantOfShape.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/graph/constant_eval.h"
#include "core/graph/constant_eval/families.h"
#include "core/graph/constant_eval/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace constant_eval_internal {

absl::StatusOr<std::vector<Tensor>> EvaluateGeneratorOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements) {
  const std::string& op = node.op_type;
  const InputAt input{inputs};
  std::vector<Tensor> out;
  if (op == "Range") {
    if (input(1) == nullptr || input(2) == nullptr) {
      return NodeError(node, "missing limit or delta");
    }
    const DType type = input(0)->dtype();
    double n;
    if (IsFloating(type)) {
      const double start = Get<double>(*input(0), 0),
                   limit = Get<double>(*input(1), 0),
                   delta = Get<double>(*input(2), 0);
      if (delta == 0) return NodeError(node, "delta is 0");
      n = std::max(std::ceil((limit - start) / delta), 0.0);
      if (!(n <= static_cast<double>(max_elements))) {
        return NewTensor(node, type, {-1}, 0).status();
      }
      ASSIGN_OR_RETURN(
          Tensor t,
          NewTensor(node, type, {static_cast<int64_t>(n)}, max_elements));
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        SetDouble(&t, i, start + static_cast<double>(i) * delta);
      }
      out.push_back(std::move(t));
    } else {
      const int64_t start = Get<int64_t>(*input(0), 0),
                    limit = Get<int64_t>(*input(1), 0),
                    delta = Get<int64_t>(*input(2), 0);
      if (delta == 0) return NodeError(node, "delta is 0");
      n = std::max(
          std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                    static_cast<double>(delta)),
          0.0);
      if (!(n <= static_cast<double>(max_elements))) {
        return absl::ResourceExhaustedError(
            absl::StrCat(node.Label(), ": range is too large to evaluate"));
      }
      ASSIGN_OR_RETURN(
          Tensor t,
          NewTensor(node, type, {static_cast<int64_t>(n)}, max_elements));
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        // Wrapping arithmetic: defined even for absurd deltas.
        SetInt(&t, i,
               static_cast<int64_t>(static_cast<uint64_t>(start) +
                                    static_cast<uint64_t>(i) *
                                        static_cast<uint64_t>(delta)));
      }
      out.push_back(std::move(t));
    }
  } else if (op == "ConstantOfShape") {
    if (input(0) == nullptr) return NodeError(node, "missing shape");
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ToInt64Vector(*input(0)));
    for (int64_t d : shape) {
      if (d < 0) return NodeError(node, "negative dim in shape");
    }
    const Attribute* value = node.FindAttribute("value");
    DType type = DType::kFloat;
    if (value != nullptr && value->type == Attribute::Type::kTensor) {
      if (value->t.num_elements() != 1 || !IsNumeric(value->t.dtype())) {
        return NodeError(node, "value must be a one-element numeric tensor");
      }
      type = value->t.dtype();
    }
    ASSIGN_OR_RETURN(Tensor t, NewTensor(node, type, shape, max_elements));
    if (value != nullptr && value->type == Attribute::Type::kTensor) {
      const size_t esize = DTypeSize(type);
      auto* dst = static_cast<char*>(t.mutable_raw());
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        std::memcpy(dst + i * esize, value->t.raw(), esize);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace constant_eval_internal
}  // namespace quantd
