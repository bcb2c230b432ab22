// MCT's interest points and the graph outputs, with the distance each is
// measured with (sensitivity.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/pipeline/mixed_precision/sensitivity.h"

namespace quantd {
bool IsMpInterestOp(const std::string& op_type) {
  static const std::set<std::string> kOps = {
      "Conv",    "ConvTranspose", "Gemm", "MatMul",
      "Sigmoid", "Softmax",       "Add",  "Concat"};
  return kOps.count(op_type) > 0;
}

namespace {

DistanceKind KindFor(const std::string& op) {
  if (op == "Softmax") return DistanceKind::kKl;
  if (op == "Sigmoid" || op == "Gemm" || op == "MatMul") {
    return DistanceKind::kCosine;
  }
  return DistanceKind::kNormalizedMse;
}

}  // namespace

std::vector<InterestPoint> MpInterestPoints(const Model& model,
                                            const std::vector<NodePlan>& plans,
                                            double factor) {
  const Graph& g = model.graph;
  std::vector<InterestPoint> all;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.outputs.empty() || !IsMpInterestOp(n.op_type)) continue;
    if (i < plans.size() && plans[i].fused_inner) continue;
    all.push_back({n.outputs[0], KindFor(n.op_type)});
  }
  if (!(factor < 1.0) || all.empty()) return all;
  // Evenly thinned, as MCT's num_interest_points_factor.
  const size_t keep = std::max<size_t>(
      1,
      static_cast<size_t>(std::ceil(factor * static_cast<double>(all.size()))));
  std::vector<InterestPoint> out;
  for (size_t k = 0; k < keep; ++k) {
    out.push_back(all[k * all.size() / keep]);
  }
  return out;
}

std::vector<InterestPoint> MpOutputPoints(const Model& model) {
  const Graph& g = model.graph;
  std::map<std::string, std::string> producer;
  for (const Node& n : g.nodes) {
    for (const auto& o : n.outputs) producer[o] = n.op_type;
  }
  std::vector<InterestPoint> out;
  for (const auto& o : g.outputs) {
    auto it = producer.find(o.name);
    out.push_back({o.name, it == producer.end() ? DistanceKind::kNormalizedMse
                                                : KindFor(it->second)});
  }
  return out;
}

}  // namespace quantd
