// Shape rules of ONNX logical ops (onnx/defs/logical): comparisons, boolean
// and bitwise ops.

#include "absl/status/status.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status CompareRule(RuleContext* c) {
  return BroadcastAll(c, 0, c->inputs.size(), DType::kBool, true);
}

}  // namespace

void AddLogicalRules(RuleTable* m) {
  for (const char* op : {"Not", "BitwiseNot"}) (*m)[op] = UnaryRule;
  for (const char* op : {"BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    (*m)[op] = ArithmeticRule;
  }
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual",
                         "GreaterOrEqual", "And", "Or", "Xor"}) {
    (*m)[op] = CompareRule;
  }
}

}  // namespace shape_internal
}  // namespace quantd
