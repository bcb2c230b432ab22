// The constant evaluator's op families, one file each (constant_eval/*.cc,
// as ONNX's onnx/defs/ folders); EvaluateNode (constant_eval.cc) checks the
// inputs once and dispatches here. Each takes EvaluateNode's arguments and
// may assume input 0 is present (except ConstantOfShape) and numeric.
// Internal to core/graph.
#ifndef QUANTD_CORE_GRAPH_CONSTANT_EVAL_FAMILIES_H_
#define QUANTD_CORE_GRAPH_CONSTANT_EVAL_FAMILIES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd {
namespace constant_eval_internal {

using Evaluator = absl::StatusOr<std::vector<Tensor>> (*)(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements);

// Shape, Size, Identity, Dropout, Cast, Gather, (Un)Squeeze, Concat, Slice,
// Reshape, Flatten, Transpose, Expand, Tile, Where (tensor.cc).
absl::StatusOr<std::vector<Tensor>> EvaluateTensorOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements);
// Range, ConstantOfShape (generator.cc).
absl::StatusOr<std::vector<Tensor>> EvaluateGeneratorOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements);
// Element-wise math and logic: Neg, Abs, Floor, Ceil, Sqrt, Not, Add, Sub,
// Mul, Div, Mod, Max, Min, comparisons, And, Or (math.cc).
absl::StatusOr<std::vector<Tensor>> EvaluateElementwiseOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements);
// ReduceProd, ReduceSum (reduction.cc).
absl::StatusOr<std::vector<Tensor>> EvaluateReductionOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements);

}  // namespace constant_eval_internal
}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_CONSTANT_EVAL_FAMILIES_H_
