// Shape rules of ONNX generator ops (onnx/defs/generator): ConstantOfShape,
// Range, EyeLike, Bernoulli, Random*.
#include <cstdint>

#include "absl/status/status.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status ConstantOfShapeRule(RuleContext* c) {
  DType dtype = DType::kFloat;
  const Attribute* v = c->node->FindAttribute("value");
  if (v != nullptr && v->type == Attribute::Type::kTensor) dtype = v->t.dtype();
  auto shape = ConstInts(*c, 0);
  if (!shape.ok()) {
    if (HasRank(*c, 0) && In(*c, 0)->shape.size() == 1 &&
        In(*c, 0)->shape[0] >= 0) {
      RETURN_IF_ERROR(CheckRank(*c, In(*c, 0)->shape[0]));
      Set(c, 0, dtype, Shape(In(*c, 0)->shape[0], -1));
    } else {
      SetType(c, 0, dtype);
    }
    return absl::OkStatus();
  }
  for (int64_t d : *shape) {
    if (d < 0) return Error(*c, "negative dim in shape");
  }
  Set(c, 0, dtype, *shape);
  return absl::OkStatus();
}

absl::Status RangeRule(RuleContext* c) {
  Set(c, 0, TypeOf(*c, 0), {-1});
  return absl::OkStatus();
}

absl::Status EyeLikeRule(RuleContext* c) {
  const int64_t t = c->node->GetInt("dtype", 0);
  Same(c, 0, 0, t != 0 ? static_cast<DType>(t) : TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status BernoulliRule(RuleContext* c) {
  const int64_t t = c->node->GetInt("dtype", 0);
  Same(c, 0, 0, t != 0 ? static_cast<DType>(t) : TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status RandomLikeRule(RuleContext* c) {
  const int64_t t = c->node->GetInt("dtype", 0);
  Same(c, 0, 0, t != 0 ? static_cast<DType>(t) : TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status RandomRule(RuleContext* c) {
  const DType dtype = static_cast<DType>(c->node->GetInt("dtype", 1));
  Shape s = c->node->GetInts("shape");
  for (int64_t& d : s) {
    ASSIGN_OR_RETURN(d, Dim(*c, d));
  }
  Set(c, 0, dtype, s);
  return absl::OkStatus();
}

}  // namespace

void AddGeneratorRules(RuleTable* m) {
  (*m)["ConstantOfShape"] = ConstantOfShapeRule;
  (*m)["Range"] = RangeRule;
  (*m)["EyeLike"] = EyeLikeRule;
  (*m)["Bernoulli"] = BernoulliRule;
  for (const char* op : {"RandomUniformLike", "RandomNormalLike"}) {
    (*m)[op] = RandomLikeRule;
  }
  for (const char* op : {"RandomUniform", "RandomNormal"}) {
    (*m)[op] = RandomRule;
  }
}

}  // namespace shape_internal
}  // namespace quantd
