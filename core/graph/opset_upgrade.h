// Rewrites a model to a newer default-domain opset (the QDQ exporter needs
// 13, or 21 for 4-bit and blocked quantization).
//
//   RETURN_IF_ERROR(UpgradeOpset(&model, 13));
//
// From opsets 7..12 to 13: Clip min/max attributes -> inputs, Split `split`,
// Squeeze/Unsqueeze and ReduceSum `axes` -> inputs, Pad (<= 10) `pads` and
// `value` -> inputs, Slice (<= 9) attributes -> inputs, TopK (<= 9) `k` ->
// input, Dropout `ratio` -> input, Upsample and Resize-10 -> Resize-13 with
// asymmetric coordinates (nearest: floor), Scatter -> ScatterElements,
// BatchNormalization `spatial` dropped, and Softmax/LogSoftmax/Hardmax
// (<= 12, which coerce the input to 2-D at `axis`) made explicit: axis -1
// when it is the last axis, else Flatten -> op(axis 1) -> Reshape back.
// From 13 to 18+: Reduce{Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare}
// `axes` -> input; Split without a split input gains `num_outputs`. To 21:
// GroupNormalization per-group scale/bias expanded
// per channel. Other changes up to 21 are additive. ir_version is raised to
// the minimum the target opset needs. Subgraphs are upgraded too.
#ifndef QUANTD_CORE_GRAPH_OPSET_UPGRADE_H_
#define QUANTD_CORE_GRAPH_OPSET_UPGRADE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace quantd {

// target_opset in [13, 21] and >= the model's opset (no downgrades); a model
// already at the target is left unchanged.
absl::Status UpgradeOpset(Model* model, int64_t target_opset);

// The smallest IR version that may declare `opset` (ONNX's release table).
int64_t MinIrVersionForOpset(int64_t opset);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_OPSET_UPGRADE_H_
