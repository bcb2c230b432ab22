#include "core/graph/graph_index.h"

namespace quantd {

void CollectOuterReads(const Graph& subgraph,
                       absl::flat_hash_set<std::string>* names) {
  absl::flat_hash_set<std::string> local;
  for (const ValueInfo& in : subgraph.inputs) local.insert(in.name);
  for (const auto& [name, t] : subgraph.initializers) local.insert(name);
  for (const Node& node : subgraph.nodes) {
    for (const std::string& out : node.outputs) local.insert(out);
  }
  for (const Node& node : subgraph.nodes) {
    for (const std::string& in : node.inputs) {
      if (!in.empty() && !local.contains(in)) names->insert(in);
    }
    for (const auto& [key, attr] : node.attributes) {
      if (!attr.g) continue;
      absl::flat_hash_set<std::string> inner;
      CollectOuterReads(*attr.g, &inner);
      for (const std::string& n : inner) {
        if (!local.contains(n)) names->insert(n);
      }
    }
  }
  for (const ValueInfo& out : subgraph.outputs) {
    if (!local.contains(out.name)) names->insert(out.name);
  }
}

GraphIndex::GraphIndex(const Graph& graph) : graph_(graph) {
  for (const ValueInfo& out : graph.outputs) outputs_.insert(out.name);
  for (const ValueInfo& in : graph.inputs) inputs_.insert(in.name);
  for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
    const Node& node = graph.nodes[n];
    for (const std::string& out : node.outputs) {
      if (!out.empty()) producer_.emplace(out, n);
    }
    absl::flat_hash_set<std::string> reads;
    for (const std::string& in : node.inputs) {
      if (!in.empty()) reads.insert(in);
    }
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) CollectOuterReads(*attr.g, &reads);
    }
    for (const std::string& in : reads) consumers_[in].push_back(n);
  }
}

int GraphIndex::Producer(absl::string_view tensor) const {
  auto it = producer_.find(tensor);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& GraphIndex::Consumers(absl::string_view tensor) const {
  static const std::vector<int>* kNone = new std::vector<int>();
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? *kNone : it->second;
}

bool GraphIndex::IsGraphOutput(absl::string_view tensor) const {
  return outputs_.contains(tensor);
}

bool GraphIndex::IsGraphInput(absl::string_view tensor) const {
  return inputs_.contains(tensor);
}

int GraphIndex::SoleConsumer(int n) const {
  int sole = -1;
  for (const std::string& out : graph_.nodes[n].outputs) {
    if (out.empty()) continue;
    if (IsGraphOutput(out)) return -1;
    for (int c : Consumers(out)) {
      if (sole != -1 && sole != c) return -1;
      sole = c;
    }
  }
  return sole;
}

}  // namespace quantd
