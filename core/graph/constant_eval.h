// A small reference evaluator for the ops that compute shapes.
//
// Exported models compute shapes at run time (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, Range, Equal/Where masks). Shape inference and constant
// folding evaluate those nodes here once their inputs are known, without
// depending on the executor. Integer math is exact in int64; floating math
// runs in double and is rounded to the output type once.
//
// Supported: Shape, Size, Identity, Dropout (inference), Cast, Gather,
// Unsqueeze, Squeeze, Concat, Slice, Reshape, Flatten, Transpose, Expand,
// Tile, Range, ConstantOfShape, Add, Sub, Mul, Div, Mod, Neg, Abs, Max, Min,
// Floor, Ceil, Sqrt, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not,
// And, Or, Where, ReduceProd, ReduceSum (int64/float).
#ifndef QUANTD_CORE_GRAPH_CONSTANT_EVAL_H_
#define QUANTD_CORE_GRAPH_CONSTANT_EVAL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd {

// True when EvaluateNode handles this op (default domain).
bool CanEvaluate(const Node& node);

// Evaluates `node` on constant inputs (nullptr for an absent optional
// input). Shape/Size need only their input's shape: pass a Tensor of that
// shape (its data is not read). Outputs larger than `max_elements` are
// RESOURCE_EXHAUSTED, so a folded ConstantOfShape cannot blow up memory.
absl::StatusOr<std::vector<Tensor>> EvaluateNode(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements = int64_t{1} << 24);

// Helpers shared with shape inference.
// Reads an integer tensor (int32/int64/...) as int64 values.
absl::StatusOr<std::vector<int64_t>> ToInt64Vector(const Tensor& t);
// Numpy multidirectional broadcast of two shapes (-1 = unknown dim).
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_CONSTANT_EVAL_H_
