// Shape rules of ONNX object-detection ops (onnx/defs/object_detection):
// NonMaxSuppression, RoiAlign.
#include <cstdint>

#include "absl/status/status.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status NonMaxSuppressionRule(RuleContext* c) {
  Set(c, 0, DType::kInt64, {-1, 3});  // data-dependent count
  return absl::OkStatus();
}

absl::Status RoiAlignRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const int64_t rois =
      HasRank(*c, 1) && !In(*c, 1)->shape.empty() ? In(*c, 1)->shape[0] : -1;
  const int64_t channels =
      HasRank(*c, 0) && In(*c, 0)->shape.size() > 1 ? In(*c, 0)->shape[1] : -1;
  Set(c, 0, dtype,
      {rois, channels, c->node->GetInt("output_height", 1),
       c->node->GetInt("output_width", 1)});
  return absl::OkStatus();
}

}  // namespace

void AddObjectDetectionRules(RuleTable* m) {
  (*m)["NonMaxSuppression"] = NonMaxSuppressionRule;
  (*m)["RoiAlign"] = RoiAlignRule;
}

}  // namespace shape_internal
}  // namespace quantd
