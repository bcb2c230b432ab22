// Shape and type inference over the graph IR.
//
//   ShapeInferenceOptions options;
//   options.input_shapes["input"] = {8, 3, 224, 224};   // from the samples
//   ASSIGN_OR_RETURN(ShapeInferenceResult r, InferShapes(&model, options));
//
// Fills Graph::value_info for every node output (dtype and shape; -1 marks a
// dimension that stays unknown) and refines the graph outputs. Shape
// subgraphs (Shape -> Gather -> Concat -> Reshape, Range, ...) are evaluated
// with the constant evaluator whenever their inputs are known, so with
// concrete input shapes every shape is static. Errors name the node:
//   node 'add_3' (Add): shapes [1,3] and [1,4] do not broadcast
// Ops without a rule leave their outputs unknown and are listed in the result
// (or are UNIMPLEMENTED with options.strict).
#ifndef QUANTD_CORE_GRAPH_SHAPE_INFERENCE_H_
#define QUANTD_CORE_GRAPH_SHAPE_INFERENCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd {

struct ShapeInferenceOptions {
  // Concrete graph-input shapes (ImportOptions::input_shapes rules).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Values of graph inputs that are the same for every run (e.g. an int64
  // shape input): treated as constants, so shapes computed from them fold.
  std::map<std::string, Tensor> input_values;
  // An op without a shape rule is an error instead of unknown outputs.
  bool strict = false;
  // Values computed from shapes are tracked up to this many elements.
  int64_t max_constant_elements = int64_t{1} << 20;
  // ...and up to this many elements in all: past it, further computed values
  // are not tracked (their shapes still are). Thousands of nodes that each
  // make a large constant from a few bytes would otherwise hold gigabytes.
  int64_t max_total_constant_elements = int64_t{1} << 26;
  // A tensor of higher rank is an error naming its node: no real model comes
  // near, and a shape of a million dims copied along a chain of nodes would
  // exhaust memory.
  int64_t max_rank = 64;
};

struct ShapeInferenceResult {
  // Labels of nodes whose op has no rule (outputs left unknown).
  std::vector<std::string> unsupported;
  // Tensors (not initializers) whose values became known: outputs of shape
  // computations. Constant folding turns them into initializers.
  std::map<std::string, Tensor> constants;
};

absl::StatusOr<ShapeInferenceResult> InferShapes(
    Model* model, const ShapeInferenceOptions& options = {});

// Drops inferred types: value_info of the graph and of every subgraph. Use
// before exporting a graph whose shapes were bound for calibration with its
// original (dynamic) graph inputs restored: ONNX Runtime re-infers from the
// declared inputs, and bound shapes can make it reject branches of If nodes
// that these inputs never take.
void ClearInferredShapes(Graph* graph);

// True when InferShapes has a rule for this op type (default domain).
bool HasShapeRule(const std::string& op_type);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_SHAPE_INFERENCE_H_
