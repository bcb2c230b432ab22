// Shape rules of ONNX quantization ops (onnx/defs/quantization):
// (De)QuantizeLinear, DynamicQuantizeLinear.

#include "absl/status/status.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status QuantizeRule(RuleContext* c) {
  DType t = DType::kUint8;
  if (Present(*c, 2) && TypeOf(*c, 2) != DType::kUndefined) {
    t = TypeOf(*c, 2);
  } else if (c->node->GetInt("output_dtype", 0) != 0) {
    t = static_cast<DType>(c->node->GetInt("output_dtype", 0));
  }
  Same(c, 0, 0, t);
  return absl::OkStatus();
}

absl::Status DequantizeRule(RuleContext* c) {
  const DType scale = TypeOf(*c, 1);
  Same(c, 0, 0, scale == DType::kUndefined ? DType::kFloat : scale);
  return absl::OkStatus();
}

absl::Status DynamicQuantizeRule(RuleContext* c) {
  Same(c, 0, 0, DType::kUint8);
  Set(c, 1, DType::kFloat, {});
  Set(c, 2, DType::kUint8, {});
  return absl::OkStatus();
}

}  // namespace

void AddQuantizationRules(RuleTable* m) {
  (*m)["QuantizeLinear"] = QuantizeRule;
  (*m)["DequantizeLinear"] = DequantizeRule;
  (*m)["DynamicQuantizeLinear"] = DynamicQuantizeRule;
}

}  // namespace shape_internal
}  // namespace quantd
