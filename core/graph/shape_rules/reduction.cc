// Shape rules of ONNX reduction ops (onnx/defs/reduction): Reduce*, ArgMax,
// ArgMin.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status ReduceRule(RuleContext* c) {
  const std::string& op = c->node->op_type;
  const bool arg = op == "ArgMax" || op == "ArgMin";
  const DType dtype = arg ? DType::kInt64 : TypeOf(*c, 0);
  const bool keep = c->node->GetInt("keepdims", 1) != 0;
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  std::vector<int64_t> axes;
  bool axes_known = true;
  if (arg) {
    axes = {c->node->GetInt("axis", 0)};
  } else {
    const bool from_input = op == "ReduceSum" ? c->opset >= 13 : c->opset >= 18;
    auto a = AxesOf(*c, 1, from_input);
    if (!a.ok()) {
      if (a.status().code() != absl::StatusCode::kNotFound) return a.status();
      axes_known = false;
    } else if (a->has_value()) {
      axes = **a;
    }
  }
  if (!axes_known) {
    if (keep) {
      Set(c, 0, dtype, Shape(r, -1));
    } else {
      SetType(c, 0, dtype);
    }
    return absl::OkStatus();
  }
  if (axes.empty() && c->node->GetInt("noop_with_empty_axes", 0) != 0) {
    Set(c, 0, dtype, s);
    return absl::OkStatus();
  }
  std::vector<bool> red(r, axes.empty());
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t axis, Axis(*c, a, r));
    red[axis] = true;
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    if (!red[i]) {
      out.push_back(s[i]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

}  // namespace

void AddReductionRules(RuleTable* m) {
  for (const char* op :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
        "ReduceSumSquare", "ArgMax", "ArgMin"}) {
    (*m)[op] = ReduceRule;
  }
}

}  // namespace shape_internal
}  // namespace quantd
