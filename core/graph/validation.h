// Structural validation of the graph IR, with errors that name the node.
//
// ValidateModel checks, for the main graph and every subgraph (If/Loop
// bodies, which may read names of enclosing scopes):
//   - the default-domain opset is declared; node domains are supported
//     ("" / "ai.onnx" only);
//   - node names are non-empty and unique, op types non-empty;
//   - every node has at least one named output;
//   - every non-empty node input is a graph input, an initializer, a node
//     output or (in a subgraph) a name of an enclosing scope;
//   - no tensor name is produced twice (node outputs, inputs, initializers);
//   - every graph output is produced;
//   - value dtypes are known ONNX element types;
//   - the graph is acyclic; nodes are reordered into a stable topological
//     order (original order kept where dependencies allow).
#ifndef QUANTD_CORE_GRAPH_VALIDATION_H_
#define QUANTD_CORE_GRAPH_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace quantd {

// Validates and topologically sorts (in place) the model's graphs.
absl::Status ValidateModel(Model* model);

// Same for one graph; `outer_scope` lists names visible from enclosing
// graphs (empty for the main graph).
absl::Status ValidateGraph(Graph* graph,
                           const std::vector<std::string>& outer_scope = {});

// Stable topological sort only (Kahn's algorithm, ties broken by original
// position). Fails naming a node on a cycle.
absl::Status TopologicalSort(Graph* graph);

// True for the ONNX element types (any recognised TensorProto.DataType).
bool IsKnownDType(int32_t value);

// True for "" and "ai.onnx".
bool IsDefaultDomain(const std::string& domain);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_VALIDATION_H_
