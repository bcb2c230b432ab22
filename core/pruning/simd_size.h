// Each entry layer's SIMD size from the TPC (MCT's BaseNode.get_simd: the
// smallest simd_size of the layer's candidate configurations).
#ifndef QUANTD_CORE_PRUNING_SIMD_SIZE_H_
#define QUANTD_CORE_PRUNING_SIMD_SIZE_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/tpc/onnx_opset_mapping.h"

namespace quantd::pruning {

// INVALID_ARGUMENT naming the node and op set when no candidate of the
// node's op set has a positive simd_size.
absl::StatusOr<int> SimdSize(const Node& node, const Graph& graph,
                             const tpc::OnnxTpcAttachment& attachment);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_SIMD_SIZE_H_
