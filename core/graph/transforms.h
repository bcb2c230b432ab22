// Graph transforms run before calibration (and kept in the returned graph).
// Each rewrites the model in place, keeps graph input/output names intact and
// leaves nodes in topological order.
//
//   RETURN_IF_ERROR(FoldConstants(&model));
//   RETURN_IF_ERROR(RemoveIdentities(&model));
//   RETURN_IF_ERROR(FoldBatchNorms(&model));
//   RETURN_IF_ERROR(FoldBatchNormsForward(&model));
#ifndef QUANTD_CORE_GRAPH_TRANSFORMS_H_
#define QUANTD_CORE_GRAPH_TRANSFORMS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace quantd {

struct ConstantFoldingOptions {
  // Results above this many elements stay computed at run time.
  int64_t max_folded_elements = int64_t{1} << 20;
  // A second binding of the graph inputs (InferShapes' input_shapes rules)
  // in which the dimensions the model leaves dynamic have other sizes. When
  // set, a value is folded only if it comes out the same under it: shape
  // computations that depend on a dynamic dimension (the batch in
  // Shape -> Gather -> Concat -> Reshape) stay in the graph, which so keeps
  // working at any size of that dimension.
  std::map<std::string, std::vector<int64_t>> probe_input_shapes;
};

// Evaluates every node whose inputs are constant (initializers, or shapes
// made static by the graph inputs' shapes: Shape -> Gather -> Concat ->
// Reshape) with the constant evaluator (constant_eval.h), turns its outputs
// into initializers and drops it; then drops unused initializers. Nodes that
// produce a graph output are kept.
absl::Status FoldConstants(Model* model,
                           const ConstantFoldingOptions& options = {});

// Removes Identity and inference-mode Dropout nodes, rewiring consumers to
// their input. When the removed output is a graph output, the producer of the
// input is renamed instead (or the node is kept if it cannot be).
absl::Status RemoveIdentities(Model* model);

// MCT's BatchNormalizationFolding: Conv/ConvTranspose/Gemm -> BN becomes one
// node with s = gamma / sqrt(var + eps), W' = W * s per output channel,
// b' = beta + (b - mean) * s. Skipped when the producer's output has another
// consumer or is a graph output, or when a parameter is not a float
// initializer.
absl::Status FoldBatchNorms(Model* model);

// MCT's BatchNormalizationForwardFolding: BN -> 1x1 Conv (group 1, no
// padding) becomes the Conv with W'[m,c] = W[m,c] * s[c] and
// b'[m] = b[m] + sum_c W[m,c] * (beta[c] - mean[c] * s[c]).
absl::Status FoldBatchNormsForward(Model* model);

// Removes initializers nothing reads.
void RemoveUnusedInitializers(Graph* graph);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_TRANSFORMS_H_
