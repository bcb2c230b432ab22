// Shape rules of ONNX control-flow ops (onnx/defs/controlflow): If, Loop.
// Their bodies are inferred through RuleContext::infer_subgraph.
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/graph/constant_eval.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

// If: infer both branches; a constant condition picks one, otherwise dims
// that differ become unknown.
absl::Status IfRule(RuleContext* c) {
  const Attribute* then_b = c->node->FindAttribute("then_branch");
  const Attribute* else_b = c->node->FindAttribute("else_branch");
  if (then_b == nullptr || else_b == nullptr || !then_b->g || !else_b->g) {
    return Error(*c, "then_branch and else_branch are required");
  }
  const Tensor* cond = Const(*c, 0);
  auto check = [&](const std::vector<ValueInfo>& outs) -> absl::Status {
    if (outs.size() != c->outputs.size()) {
      return Error(*c,
                   absl::StrCat("a branch has ", outs.size(),
                                " outputs, the node has ", c->outputs.size()));
    }
    return absl::OkStatus();
  };
  if (cond != nullptr && cond->num_elements() == 1) {
    // Only the branch that runs has to make sense for these shapes.
    auto v = ToInt64Vector(*cond);
    const bool take_then = v.ok() && (*v)[0] != 0;
    ASSIGN_OR_RETURN(
        std::vector<ValueInfo> outs,
        c->infer_subgraph((take_then ? then_b : else_b)->g.get(), {}));
    RETURN_IF_ERROR(check(outs));
    for (size_t i = 0; i < outs.size(); ++i) {
      c->outputs[i].dtype = outs[i].dtype;
      c->outputs[i].has_shape = outs[i].has_shape;
      c->outputs[i].shape = outs[i].shape;
    }
    return absl::OkStatus();
  }
  // Unknown condition: a branch that cannot work with these shapes (models
  // switch on e.g. the sample rate) cannot be the one that runs, so the
  // other decides; both failing is an error.
  absl::StatusOr<std::vector<ValueInfo>> t =
      c->infer_subgraph(then_b->g.get(), {});
  absl::StatusOr<std::vector<ValueInfo>> e =
      c->infer_subgraph(else_b->g.get(), {});
  if (!t.ok() && !e.ok()) return t.status();
  if (!t.ok()) t = e;
  if (!e.ok()) e = t;
  RETURN_IF_ERROR(check(*t));
  RETURN_IF_ERROR(check(*e));
  for (size_t i = 0; i < c->outputs.size(); ++i) {
    const ValueInfo& a = (*t)[i];
    const ValueInfo& b = (*e)[i];
    c->outputs[i].dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
    if (a.has_shape && b.has_shape && a.shape.size() == b.shape.size()) {
      Shape s = a.shape;
      for (size_t d = 0; d < s.size(); ++d) {
        if (s[d] != b.shape[d]) s[d] = -1;
      }
      Set(c, i, c->outputs[i].dtype, s);
    }
  }
  return absl::OkStatus();
}

// Loop: carried values keep their initial types; scan outputs gain a
// leading dimension of unknown length.
absl::Status LoopRule(RuleContext* c) {
  const Attribute* body = c->node->FindAttribute("body");
  if (body == nullptr || !body->g) return Error(*c, "body is required");
  const size_t carried = c->inputs.size() >= 2 ? c->inputs.size() - 2 : 0;
  std::vector<ValueInfo> body_inputs;
  ValueInfo iter;
  iter.dtype = DType::kInt64;
  iter.has_shape = true;
  body_inputs.push_back(iter);
  ValueInfo cond;
  cond.dtype = DType::kBool;
  cond.has_shape = true;
  body_inputs.push_back(cond);
  for (size_t k = 0; k < carried; ++k) {
    ValueInfo v;
    if (In(*c, k + 2) != nullptr) v = *In(*c, k + 2);
    body_inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(std::vector<ValueInfo> outs,
                   c->infer_subgraph(body->g.get(), body_inputs));
  for (size_t i = 0; i < c->outputs.size(); ++i) {
    if (i + 1 >= outs.size()) break;
    const ValueInfo& o = outs[i + 1];  // body output 0 is the condition
    if (i < carried) {
      const ValueInfo* init = In(*c, i + 2);
      c->outputs[i].dtype = o.dtype;
      if (init != nullptr && init->has_shape && o.has_shape &&
          init->shape == o.shape) {
        Set(c, i, o.dtype, o.shape);
      }
    } else {
      c->outputs[i].dtype = o.dtype;
      if (o.has_shape) {
        Shape s = {-1};
        s.insert(s.end(), o.shape.begin(), o.shape.end());
        Set(c, i, o.dtype, s);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddControlFlowRules(RuleTable* m) {
  (*m)["If"] = IfRule;
  (*m)["Loop"] = LoopRule;
}

}  // namespace shape_internal
}  // namespace quantd
