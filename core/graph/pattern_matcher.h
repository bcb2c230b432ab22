// Matches fusing patterns (TPC fusings such as Conv -> Relu) along chains of
// single-consumer nodes, as MCT's fusing does: greedy in topological order,
// longest pattern first, each node in at most one match.
//
//   std::vector<FusionPattern> patterns = {
//       {"conv_relu", {OpTypeIs("Conv"), OpTypeIn({"Relu", "Clip"})}},
//       {"conv_add_relu", {OpTypeIs("Conv"), OpTypeIs("Add"),
//       OpTypeIs("Relu")}}};
//   for (const PatternMatch& m : MatchPatterns(graph, patterns)) ...
//
// Within a match every node but the last has exactly one consumer (the next
// node) and no graph output.
#ifndef QUANTD_CORE_GRAPH_PATTERN_MATCHER_H_
#define QUANTD_CORE_GRAPH_PATTERN_MATCHER_H_

#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace quantd {

using NodePredicate = std::function<bool(const Node&)>;

struct FusionPattern {
  std::string name;
  std::vector<NodePredicate> nodes;  // one predicate per chain position
};

struct PatternMatch {
  int pattern = -1;        // index into the patterns given
  std::vector<int> nodes;  // node indices, chain order
};

// Matches in order of their first node.
std::vector<PatternMatch> MatchPatterns(
    const Graph& graph, const std::vector<FusionPattern>& patterns);

NodePredicate OpTypeIs(std::string op_type);
NodePredicate OpTypeIn(std::vector<std::string> op_types);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_PATTERN_MATCHER_H_
