// Per-op shape rules used by shape_inference.cc. Internal to core/graph.
#ifndef QUANTD_CORE_GRAPH_INTERNAL_SHAPE_RULES_H_
#define QUANTD_CORE_GRAPH_INTERNAL_SHAPE_RULES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd {
namespace shape_internal {

// What a rule sees: the node, its inputs' inferred types (nullptr when the
// input is absent or unknown) and constant values (nullptr when not known),
// and the outputs to fill (pre-sized, names set).
struct RuleContext {
  const Node* node = nullptr;
  int64_t opset = 0;
  std::vector<const ValueInfo*> inputs;
  std::vector<const Tensor*> constants;
  std::vector<ValueInfo> outputs;
  // ShapeInferenceOptions::max_rank: a rule that makes an output's rank from
  // an input's length checks it before allocating the dims.
  int64_t max_rank = 64;
  // Infers a subgraph (If/Loop body) given its inputs' types; fills the
  // graph's value_info and returns its output types.
  std::function<absl::StatusOr<std::vector<ValueInfo>>(
      Graph* graph, const std::vector<ValueInfo>& inputs)>
      infer_subgraph;
};

using ShapeRule = std::function<absl::Status(RuleContext*)>;

// The rank limit (ShapeInferenceOptions::max_rank): INVALID_ARGUMENT naming
// the node (and `output` when not empty) for a rank above `max_rank`.
absl::Status CheckOutputRank(const Node& node, const std::string& output,
                             int64_t rank, int64_t max_rank);

// The rule for an op type, or nullptr.
const ShapeRule* FindShapeRule(const std::string& op_type);

}  // namespace shape_internal
}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_INTERNAL_SHAPE_RULES_H_
