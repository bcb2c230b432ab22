#include "core/graph/pattern_matcher.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/graph/graph_index.h"

namespace quantd {

std::vector<PatternMatch> MatchPatterns(
    const Graph& graph, const std::vector<FusionPattern>& patterns) {
  GraphIndex index(graph);
  std::vector<int> order(patterns.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return patterns[a].nodes.size() > patterns[b].nodes.size();
  });
  std::vector<bool> used(graph.nodes.size(), false);
  std::vector<PatternMatch> matches;
  for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
    if (used[n]) continue;
    for (int p : order) {
      const FusionPattern& pattern = patterns[p];
      if (pattern.nodes.empty()) continue;
      std::vector<int> chain;
      int cur = n;
      for (size_t k = 0; k < pattern.nodes.size(); ++k) {
        if (k > 0) {
          cur = index.SoleConsumer(chain.back());
          if (cur < 0) break;
        }
        if (used[cur] || !pattern.nodes[k](graph.nodes[cur])) break;
        chain.push_back(cur);
      }
      if (chain.size() != pattern.nodes.size()) continue;
      for (int c : chain) used[c] = true;
      matches.push_back(PatternMatch{p, std::move(chain)});
      break;
    }
  }
  return matches;
}

NodePredicate OpTypeIs(std::string op_type) {
  return [op_type = std::move(op_type)](const Node& node) {
    return node.op_type == op_type;
  };
}

NodePredicate OpTypeIn(std::vector<std::string> op_types) {
  return [op_types = std::move(op_types)](const Node& node) {
    return std::find(op_types.begin(), op_types.end(), node.op_type) !=
           op_types.end();
  };
}

}  // namespace quantd
