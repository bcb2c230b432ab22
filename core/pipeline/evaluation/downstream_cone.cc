#include "core/pipeline/evaluation/downstream_cone.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

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

ConeDivergence::ConeDivergence(const DownstreamCone& cone) : cone_(cone) {
  const Graph& g = cone.model->graph;
  if (!g.nodes.empty()) first_ = &g.nodes[0];
  for (const auto& name : cone.produced) {
    ids_.emplace(name, static_cast<int>(ids_.size()));
  }
  consumers_.assign(ids_.size(), 0);
  graph_output_.assign(ids_.size(), 0);
  for (const auto& out : g.outputs) {
    auto it = ids_.find(out.name);
    if (it != ids_.end()) graph_output_[it->second] = 1;
  }
  reads_.resize(g.nodes.size());
  writes_.resize(g.nodes.size());
  last_output_.assign(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::set<int> reads;  // a node reading a tensor twice consumes it once
    for (const auto& in : NodeReads(n)) {
      auto it = ids_.find(in);
      if (it != ids_.end()) reads.insert(it->second);
    }
    for (int id : reads) ++consumers_[id];
    reads_[i].assign(reads.begin(), reads.end());
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      auto it = n.outputs[k].empty() ? ids_.end() : ids_.find(n.outputs[k]);
      writes_[i].push_back(it == ids_.end() ? -1 : it->second);
      if (!n.outputs[k].empty()) last_output_[i] = static_cast<int>(k);
    }
  }
}

ConeDivergence::Tracker::Tracker(const ConeDivergence& cone,
                                 const std::map<std::string, Tensor>& cache,
                                 std::function<void()> on_converged)
    : cone_(cone),
      cache_(cache),
      on_converged_(std::move(on_converged)),
      differs_(cone.ids_.size(), 0),
      unread_(cone.ids_.size(), 0) {
  observer_ = [this](const Node& node, int output, const Tensor& value) {
    Observe(node, output, value);
  };
}

namespace {

bool SameBytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (DTypeSize(a.dtype()) == 0) return false;  // not comparable: differs
  if (a.raw() == b.raw()) return true;
  return std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

}  // namespace

void ConeDivergence::Tracker::Observe(const Node& node, int output,
                                      const Tensor& value) {
  if (converged_) return;
  const ConeDivergence& c = cone_;
  const std::ptrdiff_t index = &node - c.first_;
  if (c.first_ == nullptr || index < 0 ||
      index >= static_cast<std::ptrdiff_t>(c.reads_.size()) ||
      output >= static_cast<int>(c.writes_[index].size())) {
    // Not one of the cone's nodes (a branch's): nothing is concluded.
    differing_outputs_ = std::max(differing_outputs_, 1);
    return;
  }
  const int i = static_cast<int>(index);
  if (i != node_) {  // the node's first output: it has read its inputs
    node_ = i;
    node_differs_ = i == 0;
    for (int id : c.reads_[i]) {
      if (!differs_[id]) continue;
      node_differs_ = true;
      if (--unread_[id] == 0) --differing_live_;
    }
  }
  const int id = c.writes_[i][output];
  if (id >= 0 && node_differs_) {
    auto it = cache_.find(c.cone_.model->graph.nodes[i].outputs[output]);
    if (it == cache_.end() || !SameBytes(it->second, value)) {
      differs_[id] = 1;
      unread_[id] = c.consumers_[id];
      if (unread_[id] > 0) ++differing_live_;
      if (c.graph_output_[id]) ++differing_outputs_;
    }
  }
  if (output == c.last_output_[i] && differing_live_ == 0 &&
      differing_outputs_ == 0) {
    converged_ = true;
    if (on_converged_) on_converged_();
  }
}

bool ConeDivergence::Tracker::Differs(const std::string& tensor) const {
  auto it = cone_.ids_.find(tensor);
  return it != cone_.ids_.end() && differs_[it->second];
}

}  // namespace quantd
