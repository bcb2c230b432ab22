// Graph preparation: decomposed hard-swish (Add/Clip/Mul/Div pieces, or
// x * HardSigmoid(x, 1/6, 0.5)) becomes one HardSwish node, as MCT sees it.
#ifndef QUANTD_CORE_PIPELINE_PREP_HARD_SWISH_FUSION_H_
#define QUANTD_CORE_PIPELINE_PREP_HARD_SWISH_FUSION_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace quantd {

// Replaces every decomposed hard-swish of the main graph whose intermediate
// tensors have no other use by HardSwish(x) (same output name, the last
// piece's node name), upgrading the model to opset 14 when one is found.
// Returns how many were replaced.
absl::StatusOr<int> FuseHardSwish(Model* model);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_HARD_SWISH_FUSION_H_
