// The names a graph reads from its enclosing scopes, and every name a node
// reads: its inputs and the free names of its subgraphs (If / Loop / Scan
// branches read outer tensors and initializers implicitly).
#ifndef QUANTD_CORE_GRAPH_FREE_NAMES_H_
#define QUANTD_CORE_GRAPH_FREE_NAMES_H_

#include <set>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace quantd {

// Adds to `out` the names `g` uses (recursively through its nodes'
// subgraphs) that neither it nor its subgraphs define.
void CollectFreeNames(const Graph& g, std::set<std::string>* out);

// The free names of `n`'s subgraph attributes, sorted.
std::vector<std::string> ImplicitInputs(const Node& n);

// `n`'s non-empty inputs, then ImplicitInputs(n).
std::vector<std::string> NodeReads(const Node& n);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_FREE_NAMES_H_
