#include "core/pipeline/mixed_precision/consumer_input_bits.h"

#include <algorithm>
#include <set>

#include "core/pipeline/prep/op_config_bits.h"

namespace quantd {

int ConsumerInputLimit(const Graph& g, const GraphIndex& index,
                       const std::vector<NodePlan>& plans, int i) {
  int limit = 1 << 30;
  if (g.nodes[i].outputs.empty()) return limit;
  std::vector<int> frontier = index.Consumers(g.nodes[i].outputs[0]);
  std::set<int> seen;
  while (!frontier.empty()) {
    const int c = frontier.back();
    frontier.pop_back();
    if (!seen.insert(c).second) continue;
    limit = std::min(limit, MaxSupportedInputBits(plans[c].config));
    if (plans[c].preserving && !g.nodes[c].outputs.empty()) {
      for (int n : index.Consumers(g.nodes[c].outputs[0])) {
        frontier.push_back(n);
      }
    }
  }
  return limit;
}

}  // namespace quantd
