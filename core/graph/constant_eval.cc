// EvaluateNode: checks a node's inputs once and dispatches to its family's
// evaluator (constant_eval/*.cc, one file per ONNX operator family).
#include "core/graph/constant_eval.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/constant_eval/families.h"
#include "core/graph/constant_eval/helpers.h"
#include "core/graph/validation.h"

namespace quantd {
namespace {

using constant_eval_internal::Evaluator;
using constant_eval_internal::Get;
using constant_eval_internal::IsNumeric;
using constant_eval_internal::NodeError;

// The family evaluator of each op EvaluateNode handles (default domain).
const absl::flat_hash_map<std::string, Evaluator>& Evaluators() {
  using constant_eval_internal::EvaluateElementwiseOp;
  using constant_eval_internal::EvaluateGeneratorOp;
  using constant_eval_internal::EvaluateReductionOp;
  using constant_eval_internal::EvaluateTensorOp;
  static const auto* kEvaluators =
      new absl::flat_hash_map<std::string, Evaluator>{
          {"Shape", EvaluateTensorOp},
          {"Size", EvaluateTensorOp},
          {"Identity", EvaluateTensorOp},
          {"Dropout", EvaluateTensorOp},
          {"Cast", EvaluateTensorOp},
          {"Gather", EvaluateTensorOp},
          {"Unsqueeze", EvaluateTensorOp},
          {"Squeeze", EvaluateTensorOp},
          {"Concat", EvaluateTensorOp},
          {"Slice", EvaluateTensorOp},
          {"Reshape", EvaluateTensorOp},
          {"Flatten", EvaluateTensorOp},
          {"Transpose", EvaluateTensorOp},
          {"Expand", EvaluateTensorOp},
          {"Tile", EvaluateTensorOp},
          {"Where", EvaluateTensorOp},
          {"Range", EvaluateGeneratorOp},
          {"ConstantOfShape", EvaluateGeneratorOp},
          {"Add", EvaluateElementwiseOp},
          {"Sub", EvaluateElementwiseOp},
          {"Mul", EvaluateElementwiseOp},
          {"Div", EvaluateElementwiseOp},
          {"Mod", EvaluateElementwiseOp},
          {"Neg", EvaluateElementwiseOp},
          {"Abs", EvaluateElementwiseOp},
          {"Max", EvaluateElementwiseOp},
          {"Min", EvaluateElementwiseOp},
          {"Floor", EvaluateElementwiseOp},
          {"Ceil", EvaluateElementwiseOp},
          {"Sqrt", EvaluateElementwiseOp},
          {"Equal", EvaluateElementwiseOp},
          {"Less", EvaluateElementwiseOp},
          {"Greater", EvaluateElementwiseOp},
          {"LessOrEqual", EvaluateElementwiseOp},
          {"GreaterOrEqual", EvaluateElementwiseOp},
          {"Not", EvaluateElementwiseOp},
          {"And", EvaluateElementwiseOp},
          {"Or", EvaluateElementwiseOp},
          {"ReduceProd", EvaluateReductionOp},
          {"ReduceSum", EvaluateReductionOp}};
  return *kEvaluators;
}

template <typename T>
std::vector<int64_t> Widened(const Tensor& t) {
  const T* p = static_cast<const T*>(t.raw());
  return std::vector<int64_t>(p, p + t.num_elements());
}

}  // namespace

// One dtype switch per tensor, not per element (weights: millions).
absl::StatusOr<std::vector<int64_t>> ToInt64Vector(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kInt8:
      return Widened<int8_t>(t);
    case DType::kUint8:
    case DType::kBool:
      return Widened<uint8_t>(t);
    case DType::kInt16:
      return Widened<int16_t>(t);
    case DType::kUint16:
      return Widened<uint16_t>(t);
    case DType::kInt32:
      return Widened<int32_t>(t);
    case DType::kUint32:
      return Widened<uint32_t>(t);
    case DType::kInt64:
      return Widened<int64_t>(t);
    case DType::kUint64:
      return Widened<uint64_t>(t);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "expected an integer tensor, got ", DTypeName(t.dtype())));
  }
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x == y) {
      out[i] = x;
    } else if (x == 1) {
      out[i] = y;
    } else if (y == 1) {
      out[i] = x;
    } else if (x == -1 || y == -1) {
      // Unknown vs known d > 1: the result must be d (or it is an error at
      // run time); unknown vs unknown stays unknown.
      out[i] = x == -1 ? y : x;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes [", absl::StrJoin(a, ","), "] and [",
                       absl::StrJoin(b, ","), "] do not broadcast"));
    }
  }
  return out;
}

bool CanEvaluate(const Node& node) {
  return IsDefaultDomain(node.domain) && Evaluators().contains(node.op_type);
}

absl::StatusOr<std::vector<Tensor>> EvaluateNode(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements) {
  const std::string& op = node.op_type;
  if (!CanEvaluate(node)) {
    return absl::UnimplementedError(
        absl::StrCat(node.Label(), ": not a constant-evaluable op"));
  }
  const bool needs_data = op != "Shape" && op != "Size";
  for (const Tensor* t : inputs) {
    if (t == nullptr) continue;
    if (needs_data && !IsNumeric(t->dtype())) {
      return absl::UnimplementedError(
          absl::StrCat(node.Label(), ": constant evaluation of ",
                       DTypeName(t->dtype()), " is not supported"));
    }
  }
  if (inputs.empty() && op != "ConstantOfShape") {
    return NodeError(node, "missing input");
  }
  auto input = [&](size_t k) -> const Tensor* {
    return k < inputs.size() ? inputs[k] : nullptr;
  };
  if (input(0) == nullptr && op != "ConstantOfShape") {
    return NodeError(node, "missing input 0");
  }
  return Evaluators().at(op)(node, inputs, opset, max_elements);
}

}  // namespace quantd
