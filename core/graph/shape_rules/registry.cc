// The shape-rule registry: every family's rules in one table.
#include <string>

#include "core/graph/internal/shape_rules.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"

namespace quantd {
namespace shape_internal {
namespace {

const RuleTable& Rules() {
  static const auto* rules = [] {
    auto* m = new RuleTable();
    AddMathRules(m);
    AddLogicalRules(m);
    AddNnRules(m);
    AddTensorRules(m);
    AddTensorReshapeRules(m);
    AddReductionRules(m);
    AddRnnRules(m);
    AddQuantizationRules(m);
    AddGeneratorRules(m);
    AddControlFlowRules(m);
    AddObjectDetectionRules(m);
    return m;
  }();
  return *rules;
}

}  // namespace

const ShapeRule* FindShapeRule(const std::string& op_type) {
  auto it = Rules().find(op_type);
  return it == Rules().end() ? nullptr : &it->second;
}

}  // namespace shape_internal
}  // namespace quantd
