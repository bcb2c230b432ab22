// Constant evaluation of ONNX element-wise math and logical ops
// (onnx/defs/math, onnx/defs/logical): unary ops, and the broadcasting binary
// ops, comparisons and And/Or.
#include <algorithm>
#include <cmath>
#include <map>
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
namespace {

enum class Binary {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kMax,
  kMin,
  kEqual,
  kLess,
  kGreater,
  kLessEq,
  kGreaterEq,
  kAnd,
  kOr
};

bool IsComparison(Binary op) {
  return op == Binary::kEqual || op == Binary::kLess ||
         op == Binary::kGreater || op == Binary::kLessEq ||
         op == Binary::kGreaterEq || op == Binary::kAnd || op == Binary::kOr;
}

absl::StatusOr<Tensor> BinaryOp(const Node& node, Binary op, const Tensor& a,
                                const Tensor& b, int64_t max_elements) {
  if (a.dtype() != b.dtype()) {
    return NodeError(
        node, absl::StrCat("input types differ (", DTypeName(a.dtype()), " vs ",
                           DTypeName(b.dtype()), ")"));
  }
  ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a.shape(), b.shape()));
  const DType out_type = IsComparison(op) ? DType::kBool : a.dtype();
  ASSIGN_OR_RETURN(Tensor out, NewTensor(node, out_type, shape, max_elements));
  BroadcastMap ma(shape, a.shape()), mb(shape, b.shape());
  const bool fp = IsFloating(a.dtype());
  const bool fmod = node.GetInt("fmod", 0) != 0;
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const int64_t ia = ma.Map(i), ib = mb.Map(i);
    if (fp) {
      const double x = Get<double>(a, ia), y = Get<double>(b, ib);
      double r = 0;
      switch (op) {
        case Binary::kAdd:
          r = x + y;
          break;
        case Binary::kSub:
          r = x - y;
          break;
        case Binary::kMul:
          r = x * y;
          break;
        case Binary::kDiv:
          r = x / y;
          break;
        case Binary::kMod:
          r = std::fmod(x, y);
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
          break;
        case Binary::kMax:
          r = std::max(x, y);
          break;
        case Binary::kMin:
          r = std::min(x, y);
          break;
        case Binary::kEqual:
          r = x == y;
          break;
        case Binary::kLess:
          r = x < y;
          break;
        case Binary::kGreater:
          r = x > y;
          break;
        case Binary::kLessEq:
          r = x <= y;
          break;
        case Binary::kGreaterEq:
          r = x >= y;
          break;
        case Binary::kAnd:
          r = (x != 0) && (y != 0);
          break;
        case Binary::kOr:
          r = (x != 0) || (y != 0);
          break;
      }
      SetDouble(&out, i, r);
    } else {
      const int64_t x = Get<int64_t>(a, ia), y = Get<int64_t>(b, ib);
      int64_t r = 0;
      // Wrapping arithmetic through uint64 keeps overflow defined.
      const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      switch (op) {
        case Binary::kAdd:
          r = static_cast<int64_t>(ux + uy);
          break;
        case Binary::kSub:
          r = static_cast<int64_t>(ux - uy);
          break;
        case Binary::kMul:
          r = static_cast<int64_t>(ux * uy);
          break;
        case Binary::kDiv:
        case Binary::kMod:
          if (y == 0) return NodeError(node, "integer division by zero");
          if (y == -1) {
            r = op == Binary::kDiv ? static_cast<int64_t>(0 - ux) : 0;
          } else if (op == Binary::kDiv) {
            r = x / y;  // truncation, as C and ONNX Runtime
          } else {
            r = x % y;
            if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
          }
          break;
        case Binary::kMax:
          r = std::max(x, y);
          break;
        case Binary::kMin:
          r = std::min(x, y);
          break;
        case Binary::kEqual:
          r = x == y;
          break;
        case Binary::kLess:
          r = x < y;
          break;
        case Binary::kGreater:
          r = x > y;
          break;
        case Binary::kLessEq:
          r = x <= y;
          break;
        case Binary::kGreaterEq:
          r = x >= y;
          break;
        case Binary::kAnd:
          r = (x != 0) && (y != 0);
          break;
        case Binary::kOr:
          r = (x != 0) || (y != 0);
          break;
      }
      SetInt(&out, i, r);
    }
  }
  return out;
}

absl::StatusOr<Tensor> UnaryOp(const Node& node, const Tensor& x) {
  const std::string& op = node.op_type;
  Tensor out(op == "Not" ? DType::kBool : x.dtype(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (IsFloating(x.dtype())) {
      const double v = Get<double>(x, i);
      double r = v;
      if (op == "Neg") r = -v;
      if (op == "Abs") r = std::fabs(v);
      if (op == "Floor") r = std::floor(v);
      if (op == "Ceil") r = std::ceil(v);
      if (op == "Sqrt") r = std::sqrt(v);
      if (op == "Not") r = v == 0;
      SetDouble(&out, i, r);
    } else {
      const int64_t v = Get<int64_t>(x, i);
      int64_t r = v;
      if (op == "Neg") r = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
      if (op == "Abs")
        r = v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v;
      if (op == "Sqrt") r = SafeToInt64(std::sqrt(static_cast<double>(v)));
      if (op == "Not") r = v == 0;
      SetInt(&out, i, r);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> EvaluateElementwiseOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements) {
  const std::string& op = node.op_type;
  const InputAt input{inputs};
  std::vector<Tensor> out;
  if (op == "Neg" || op == "Abs" || op == "Floor" || op == "Ceil" ||
      op == "Sqrt" || op == "Not") {
    ASSIGN_OR_RETURN(Tensor t, UnaryOp(node, *input(0)));
    out.push_back(std::move(t));
  } else {
    static const auto* kBinary = new std::map<std::string, Binary>{
        {"Add", Binary::kAdd},
        {"Sub", Binary::kSub},
        {"Mul", Binary::kMul},
        {"Div", Binary::kDiv},
        {"Mod", Binary::kMod},
        {"Max", Binary::kMax},
        {"Min", Binary::kMin},
        {"Equal", Binary::kEqual},
        {"Less", Binary::kLess},
        {"Greater", Binary::kGreater},
        {"LessOrEqual", Binary::kLessEq},
        {"GreaterOrEqual", Binary::kGreaterEq},
        {"And", Binary::kAnd},
        {"Or", Binary::kOr}};
    const Binary bop = kBinary->at(op);
    Tensor acc = *input(0);
    const bool variadic = op == "Max" || op == "Min";
    const size_t last = variadic ? inputs.size() : 2;
    if (!variadic && input(1) == nullptr) return NodeError(node, "missing B");
    for (size_t k = 1; k < last; ++k) {
      if (input(k) == nullptr) continue;
      ASSIGN_OR_RETURN(acc, BinaryOp(node, bop, acc, *input(k), max_elements));
    }
    out.push_back(std::move(acc));
  }
  return out;
}

}  // namespace constant_eval_internal
}  // namespace quantd
