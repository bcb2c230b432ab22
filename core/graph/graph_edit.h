// Small editing helpers shared by the transforms.
#ifndef QUANTD_CORE_GRAPH_GRAPH_EDIT_H_
#define QUANTD_CORE_GRAPH_GRAPH_EDIT_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace quantd {

// Makes every reader of `from` (node inputs, including reads from inside
// subgraphs that do not shadow the name) read `to` instead. Graph outputs are
// not renamed.
void RenameTensorUses(Graph* graph, const std::string& from,
                      const std::string& to);

// Subgraphs (If/Loop bodies) are held by shared_ptr, so copies of a Model
// share them. Every function that edits a subgraph first takes a private copy
// with this (cheap: tensors are copy-on-write), so editing one Model never
// changes another.
Graph* MutableSubgraph(Attribute* attr);

// Drops the nodes whose flag is set, keeping the order of the rest.
void RemoveNodes(Graph* graph, const std::vector<bool>& remove);

// A name not yet used by any tensor or initializer of the graph: `base`, or
// `base_1`, `base_2`, ...
std::string UniqueTensorName(const Graph& graph, const std::string& base);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_GRAPH_EDIT_H_
