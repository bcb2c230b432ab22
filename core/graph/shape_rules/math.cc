// Shape rules of ONNX math ops (onnx/defs/math): element-wise math and
// activations, Gemm/MatMul/Einsum, TopK, Det, window functions, losses.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/constant_eval.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status BoolUnaryRule(RuleContext* c) {
  Same(c, 0, 0, DType::kBool);
  return absl::OkStatus();
}

absl::Status PowRule(RuleContext* c) {
  return BroadcastAll(c, 0, 2, TypeOf(*c, 0), false);
}

absl::Status GemmRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0) || !HasRank(*c, 1)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  Shape a = In(*c, 0)->shape, b = In(*c, 1)->shape;
  if (a.size() != 2 || b.size() != 2) {
    return Error(*c,
                 absl::StrCat("A ", Str(a), " and B ", Str(b), " must be 2-D"));
  }
  if (c->node->GetInt("transA", 0) != 0) std::swap(a[0], a[1]);
  if (c->node->GetInt("transB", 0) != 0) std::swap(b[0], b[1]);
  if (a[1] >= 0 && b[0] >= 0 && a[1] != b[0]) {
    return Error(*c, absl::StrCat("inner dims differ: A has K=", a[1],
                                  ", B has K=", b[0]));
  }
  const Shape out = {a[0], b[1]};
  if (HasRank(*c, 2)) {
    auto bc = BroadcastShapes(out, In(*c, 2)->shape);
    if (!bc.ok() || *bc != out) {
      return Error(*c, absl::StrCat("C ", Str(In(*c, 2)->shape),
                                    " does not broadcast to ", Str(out)));
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status MatMulLike(RuleContext* c, size_t ia, size_t ib, DType dtype) {
  if (!HasRank(*c, ia) || !HasRank(*c, ib)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  Shape a = In(*c, ia)->shape, b = In(*c, ib)->shape;
  if (a.empty() || b.empty()) return Error(*c, "MatMul of a scalar");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  const int64_t ka = a.back(), kb = b[b.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return Error(*c, absl::StrCat("inner dims differ: ", Str(In(*c, ia)->shape),
                                  " x ", Str(In(*c, ib)->shape)));
  }
  auto batch = BroadcastShapes(Shape(a.begin(), a.end() - 2),
                               Shape(b.begin(), b.end() - 2));
  if (!batch.ok()) return Error(*c, std::string(batch.status().message()));
  Shape out = *batch;
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status MatMulRule(RuleContext* c) {
  return MatMulLike(c, 0, 1, TypeOf(*c, 0));
}

absl::Status MatMulIntegerRule(RuleContext* c) {
  return MatMulLike(c, 0, 1, DType::kInt32);
}

absl::Status QLinearMatMulRule(RuleContext* c) {
  return MatMulLike(c, 0, 3, TypeOf(*c, 7));
}

absl::Status TopKRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    SetType(c, 1, DType::kInt64);
    return absl::OkStatus();
  }
  Shape s = In(*c, 0)->shape;
  ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", -1),
                                      static_cast<int64_t>(s.size())));
  int64_t k = -1;
  if (c->opset < 10) {
    k = c->node->GetInt("k", -1);
  } else {
    auto v = ConstInts(*c, 1);
    if (v.ok() && v->size() == 1) k = (*v)[0];
  }
  s[axis] = k;
  Set(c, 0, dtype, s);
  Set(c, 1, DType::kInt64, s);
  return absl::OkStatus();
}

absl::Status EinsumRule(RuleContext* c) {
  // Output subscripts after "->" (or, implicitly, the letters used once, in
  // alphabetical order); each letter takes its dim from the inputs. No
  // ellipsis.
  std::string eq = c->node->GetString("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  DType dtype = TypeOf(*c, 0);
  if (eq.find("...") != std::string::npos) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  if (eq.find("->") == std::string::npos) {
    std::map<char, int> count;
    for (char ch : eq) {
      if (ch != ',') ++count[ch];
    }
    eq += "->";
    for (const auto& [ch, n] : count) {
      if (n == 1) eq += ch;
    }
  }
  const size_t arrow = eq.find("->");
  std::map<char, int64_t> dims;
  size_t pos = 0;
  for (size_t k = 0; k < c->inputs.size(); ++k) {
    size_t end = eq.find_first_of(",-", pos);
    const std::string term = eq.substr(pos, end - pos);
    pos = end + 1;
    if (!HasRank(*c, k) || In(*c, k)->shape.size() != term.size()) {
      if (HasRank(*c, k)) {
        return Error(
            *c, absl::StrCat("input ", k, " rank does not match '", term, "'"));
      }
      continue;
    }
    for (size_t i = 0; i < term.size(); ++i) {
      const int64_t d = In(*c, k)->shape[i];
      auto [it, inserted] = dims.emplace(term[i], d);
      if (!inserted && it->second == 1) it->second = d;
      if (!inserted && it->second < 0) it->second = d;
    }
  }
  Shape out;
  for (char ch : eq.substr(arrow + 2)) {
    auto it = dims.find(ch);
    out.push_back(it == dims.end() ? -1 : it->second);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status DetRule(RuleContext* c) {
  if (!HasRank(*c, 0) || In(*c, 0)->shape.size() < 2) {
    SetType(c, 0, TypeOf(*c, 0));
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  Set(c, 0, TypeOf(*c, 0), Shape(s.begin(), s.end() - 2));
  return absl::OkStatus();
}

absl::Status WindowRule(RuleContext* c) {
  const DType dtype = static_cast<DType>(c->node->GetInt("output_datatype", 1));
  auto size = ConstInts(*c, 0);
  if (size.ok() && size->size() == 1) {
    ASSIGN_OR_RETURN(int64_t n, Dim(*c, (*size)[0]));
    Set(c, 0, dtype, {n});
  } else {
    Set(c, 0, dtype, {-1});
  }
  return absl::OkStatus();
}

// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: [N, d1, ...] per
// element with reduction "none", else a scalar; SCE's optional second output
// (log-probabilities) has the scores' shape.
absl::Status LossRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const std::string reduction = c->node->GetString("reduction", "mean");
  if (reduction != "none") {
    Set(c, 0, dtype, {});
  } else if (HasRank(*c, 0) && In(*c, 0)->shape.size() >= 2) {
    Shape s = In(*c, 0)->shape;
    s.erase(s.begin() + 1);  // drop the class axis
    Set(c, 0, dtype, s);
  } else {
    SetType(c, 0, dtype);
  }
  Same(c, 1, 0, dtype);
  return absl::OkStatus();
}

}  // namespace

void AddMathRules(RuleTable* m) {
  // Element-wise ops whose output has input 0's type and shape.
  for (const char* op :
       {"Relu",       "LeakyRelu",   "PRelu",     "Sigmoid",
        "Tanh",       "HardSigmoid", "HardSwish", "Elu",
        "Selu",       "Celu",        "Gelu",      "Erf",
        "Sqrt",       "Exp",         "Log",       "Neg",
        "Abs",        "Reciprocal",  "Floor",     "Ceil",
        "Round",      "Sin",         "Cos",       "Tan",
        "Asin",       "Acos",        "Atan",      "Sinh",
        "Cosh",       "Asinh",       "Acosh",     "Atanh",
        "Softplus",   "Softsign",    "Sign",      "Softmax",
        "LogSoftmax", "Hardmax",     "Clip",      "ThresholdedRelu",
        "Shrink",     "Mish",        "CumSum"}) {
    (*m)[op] = UnaryRule;
  }
  for (const char* op : {"IsNaN", "IsInf"}) (*m)[op] = BoolUnaryRule;
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Sum", "Mean"}) {
    (*m)[op] = ArithmeticRule;
  }
  (*m)["Pow"] = PowRule;
  (*m)["Gemm"] = GemmRule;
  (*m)["MatMul"] = MatMulRule;
  (*m)["MatMulInteger"] = MatMulIntegerRule;
  (*m)["QLinearMatMul"] = QLinearMatMulRule;
  (*m)["Einsum"] = EinsumRule;
  (*m)["TopK"] = TopKRule;
  (*m)["Det"] = DetRule;
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    (*m)[op] = WindowRule;
  }
  for (const char* op :
       {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    (*m)[op] = LossRule;
  }
}

}  // namespace shape_internal
}  // namespace quantd
