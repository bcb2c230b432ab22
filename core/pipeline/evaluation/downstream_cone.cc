#include "core/pipeline/evaluation/downstream_cone.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/free_names.h"

namespace quantd {

DownstreamCone BuildDownstreamCone(const Model& model, int start,
                                   const std::map<std::string, DType>& dtypes) {
  return BuildDownstreamCone(model, start, dtypes, {}, 0);
}

DownstreamCone BuildDownstreamCone(const Model& model, int start,
                                   const std::map<std::string, DType>& dtypes,
                                   const std::set<std::string>& points,
                                   int depth) {
  const Graph& g = model.graph;
  DownstreamCone cone;
  std::vector<int> nodes;
  // Per tensor the cone makes: the fewest points met on a path to it,
  // itself included. A tensor at `depth` feeds nothing further.
  std::map<std::string, int> met;
  for (int i = start; i < static_cast<int>(g.nodes.size()); ++i) {
    bool in_cone = i == start;
    int before = i == start ? 0 : std::numeric_limits<int>::max();
    for (const auto& in : NodeReads(g.nodes[i])) {
      auto it = met.find(in);
      if (it == met.end() || (depth > 0 && it->second >= depth)) continue;
      in_cone = true;
      before = std::min(before, it->second);
    }
    if (!in_cone) continue;
    nodes.push_back(i);
    for (const auto& out : g.nodes[i].outputs) {
      if (!out.empty()) met[out] = before + (points.count(out) ? 1 : 0);
    }
  }
  for (const auto& [tensor, count] : met) cone.produced.insert(tensor);
  cone.model = std::make_shared<Model>();
  Model& m = *cone.model;
  m.ir_version = model.ir_version;
  m.opset_import = model.opset_import;
  m.graph.name = g.name;
  m.graph.value_info = g.value_info;
  m.graph.sub_byte_types = g.sub_byte_types;
  std::set<std::string> inputs;
  for (int i : nodes) {
    const Node& n = g.nodes[i];
    m.graph.nodes.push_back(n);
    // A branch's outer names (If / Loop / Scan) come along as its inputs do.
    for (const auto& in : NodeReads(n)) {
      if (cone.produced.count(in)) continue;
      if (const Tensor* t = g.FindInitializer(in)) {
        m.graph.initializers[in] = *t;  // shares the buffer
      } else if (inputs.insert(in).second) {
        ValueInfo v;
        v.name = in;
        auto d = dtypes.find(in);
        v.dtype = d == dtypes.end() ? DType::kFloat : d->second;
        m.graph.inputs.push_back(v);
        cone.inputs.push_back(in);
      }
    }
  }
  for (const auto& out : g.outputs) {
    if (cone.produced.count(out.name)) m.graph.outputs.push_back(out);
  }
  return cone;
}

absl::StatusOr<std::map<std::string, Tensor>> DownstreamConeFeeds(
    const DownstreamCone& cone, const std::map<std::string, Tensor>& cache) {
  std::map<std::string, Tensor> feeds;
  for (const auto& in : cone.inputs) {
    auto it = cache.find(in);
    if (it == cache.end()) {
      return absl::InternalError(
          absl::StrCat("tensor '", in, "' missing from the cache"));
    }
    feeds.emplace(in, it->second);
  }
  return feeds;
}

}  // namespace quantd
