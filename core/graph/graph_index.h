// Who produces and who reads each tensor of a graph.
//
//   GraphIndex index(graph);
//   int p = index.Producer("conv_out");            // node index or -1
//   for (int c : index.Consumers("conv_out")) ...  // node indices, in order
//   if (index.IsGraphOutput("y")) ...
//
// A node whose If/Loop body reads a name of this graph counts as a consumer
// of it. The index refers to node positions: rebuild it after a transform
// adds, removes or reorders nodes.
#ifndef QUANTD_CORE_GRAPH_GRAPH_INDEX_H_
#define QUANTD_CORE_GRAPH_GRAPH_INDEX_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace quantd {

class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph);

  // Index of the node that outputs `tensor`; -1 for graph inputs,
  // initializers and unknown names.
  int Producer(absl::string_view tensor) const;
  // Distinct nodes reading `tensor`, in node order.
  const std::vector<int>& Consumers(absl::string_view tensor) const;
  int NumConsumers(absl::string_view tensor) const {
    return static_cast<int>(Consumers(tensor).size());
  }
  bool IsGraphOutput(absl::string_view tensor) const;
  bool IsGraphInput(absl::string_view tensor) const;
  // Consumers plus one if it is a graph output: the number of places that
  // see the tensor.
  int NumUses(absl::string_view tensor) const {
    return NumConsumers(tensor) + (IsGraphOutput(tensor) ? 1 : 0);
  }
  // The single node reading every output of node `n` when there is exactly
  // one such node and no output is a graph output; else -1.
  int SoleConsumer(int n) const;

 private:
  const Graph& graph_;
  absl::flat_hash_map<std::string, int> producer_;
  absl::flat_hash_map<std::string, std::vector<int>> consumers_;
  absl::flat_hash_set<std::string> outputs_;
  absl::flat_hash_set<std::string> inputs_;
};

// Names a subgraph reads from enclosing scopes (used by GraphIndex).
void CollectOuterReads(const Graph& subgraph,
                       absl::flat_hash_set<std::string>* names);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_GRAPH_INDEX_H_
