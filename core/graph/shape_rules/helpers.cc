// Helpers shared by the shape rules of every operator family.
#include "core/graph/shape_rules/helpers.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/constant_eval.h"

namespace quantd {
namespace shape_internal {

absl::Status CheckOutputRank(const Node& node, const std::string& output,
                             int64_t rank, int64_t max_rank) {
  if (rank <= max_rank) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(node.Label(), ": output ", output.empty() ? "" : "'", output,
                   output.empty() ? "" : "' ", "would have rank ", rank,
                   "; tensors of rank above ", max_rank, " are not supported"));
}

absl::Status CheckRank(const RuleContext& c, int64_t rank) {
  return CheckOutputRank(*c.node, "", rank, c.max_rank);
}

absl::Status Error(const RuleContext& c, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(c.node->Label(), ": ", what));
}

std::string Str(const Shape& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

const ValueInfo* In(const RuleContext& c, size_t k) {
  return k < c.inputs.size() ? c.inputs[k] : nullptr;
}

bool HasRank(const RuleContext& c, size_t k) {
  const ValueInfo* v = In(c, k);
  return v != nullptr && v->has_shape;
}

DType TypeOf(const RuleContext& c, size_t k) {
  const ValueInfo* v = In(c, k);
  return v == nullptr ? DType::kUndefined : v->dtype;
}

const Tensor* Const(const RuleContext& c, size_t k) {
  return k < c.constants.size() ? c.constants[k] : nullptr;
}

bool Present(const RuleContext& c, size_t k) {
  return !c.node->Input(k).empty();
}

void Set(RuleContext* c, size_t i, DType dtype, Shape shape) {
  if (i >= c->outputs.size()) return;
  c->outputs[i].dtype = dtype;
  c->outputs[i].shape = std::move(shape);
  c->outputs[i].has_shape = true;
}

void SetType(RuleContext* c, size_t i, DType dtype) {
  if (i >= c->outputs.size()) return;
  c->outputs[i].dtype = dtype;
  c->outputs[i].has_shape = false;
  c->outputs[i].shape.clear();
}

void Same(RuleContext* c, size_t i, size_t k, DType dtype) {
  if (HasRank(*c, k)) {
    Set(c, i, dtype, c->inputs[k]->shape);
  } else {
    SetType(c, i, dtype);
  }
}

absl::StatusOr<int64_t> Axis(const RuleContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return Error(
        c, absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> ConstInts(const RuleContext& c, size_t k) {
  const Tensor* t = Const(c, k);
  if (t == nullptr) return absl::NotFoundError("not constant");
  auto v = ToInt64Vector(*t);
  if (!v.ok())
    return Error(c, absl::StrCat("input ", k, ": ", v.status().message()));
  return v;
}

absl::StatusOr<int64_t> Dim(const RuleContext& c, i128 v) {
  if (v < 0) return Error(c, "computed a negative dimension");
  if (v > kMaxDim) {
    return Error(c, absl::StrCat("computed dimension exceeds 2^40 (",
                                 static_cast<double>(v), ")"));
  }
  return static_cast<int64_t>(v);
}

i128 FloorDiv(i128 a, i128 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

i128 CeilDiv(i128 a, i128 b) { return -FloorDiv(-a, b); }

absl::Status UnaryRule(RuleContext* c) {
  Same(c, 0, 0, TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status BroadcastAll(RuleContext* c, size_t first, size_t last,
                          DType dtype, bool check_types) {
  Shape shape;
  bool known = true;
  bool any = false;
  DType common = DType::kUndefined;
  for (size_t k = first; k < last; ++k) {
    if (!Present(*c, k)) continue;
    if (check_types) {
      const DType t = TypeOf(*c, k);
      if (common != DType::kUndefined && t != DType::kUndefined &&
          t != common) {
        return Error(*c, absl::StrCat("input types differ (", DTypeName(common),
                                      " vs ", DTypeName(t), ")"));
      }
      if (t != DType::kUndefined) common = t;
    }
    if (!HasRank(*c, k)) {
      known = false;
      continue;
    }
    if (!any) {
      shape = c->inputs[k]->shape;
      any = true;
      continue;
    }
    auto b = BroadcastShapes(shape, c->inputs[k]->shape);
    if (!b.ok()) return Error(*c, std::string(b.status().message()));
    shape = *std::move(b);
  }
  if (known && any) {
    Set(c, 0, dtype, shape);
  } else {
    SetType(c, 0, dtype);
  }
  return absl::OkStatus();
}

absl::Status ArithmeticRule(RuleContext* c) {
  return BroadcastAll(c, 0, c->inputs.size(), TypeOf(*c, 0), true);
}

absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(const RuleContext& c,
                                                           size_t input_index,
                                                           bool from_input) {
  if (!from_input) {
    if (!c.node->HasAttribute("axes")) return std::optional<Shape>();
    return std::optional<Shape>(c.node->GetInts("axes"));
  }
  if (!Present(c, input_index)) return std::optional<Shape>();
  auto v = ConstInts(c, input_index);
  if (!v.ok()) {
    if (v.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError("axes not constant");
    }
    return v.status();
  }
  return std::optional<Shape>(*std::move(v));
}

}  // namespace shape_internal
}  // namespace quantd
