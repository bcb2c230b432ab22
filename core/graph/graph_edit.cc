#include "core/graph/graph_edit.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace quantd {
namespace {

bool Defines(const Graph& g, const std::string& name) {
  for (const ValueInfo& in : g.inputs) {
    if (in.name == name) return true;
  }
  if (g.initializers.count(name) > 0) return true;
  for (const Node& node : g.nodes) {
    for (const std::string& out : node.outputs) {
      if (out == name) return true;
    }
  }
  return false;
}

void RenameInSubgraph(Graph* g, const std::string& from, const std::string& to);

bool ReadsName(const Graph& g, const std::string& name) {
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs) {
      if (in == name) return true;
    }
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g && ReadsName(*attr.g, name)) return true;
    }
  }
  for (const ValueInfo& out : g.outputs) {
    if (out.name == name) return true;
  }
  return false;
}

void RenameInSubgraph(Graph* g, const std::string& from,
                      const std::string& to) {
  if (Defines(*g, from)) return;  // shadowed: the inner name is another value
  for (Node& node : g->nodes) {
    for (std::string& in : node.inputs) {
      if (in == from) in = to;
    }
    for (auto& [key, attr] : node.attributes) {
      if (attr.g && ReadsName(*attr.g, from)) {
        RenameInSubgraph(MutableSubgraph(&attr), from, to);
      }
    }
  }
  for (ValueInfo& out : g->outputs) {
    if (out.name == from) out.name = to;  // a body output read from outside
  }
}

}  // namespace

void RenameTensorUses(Graph* graph, const std::string& from,
                      const std::string& to) {
  for (Node& node : graph->nodes) {
    for (std::string& in : node.inputs) {
      if (in == from) in = to;
    }
    for (auto& [key, attr] : node.attributes) {
      if (attr.g && ReadsName(*attr.g, from)) {
        RenameInSubgraph(MutableSubgraph(&attr), from, to);
      }
    }
  }
}

Graph* MutableSubgraph(Attribute* attr) {
  if (!attr->g) return nullptr;
  attr->g = std::make_shared<Graph>(*attr->g);
  return attr->g.get();
}

void RemoveNodes(Graph* graph, const std::vector<bool>& remove) {
  std::vector<Node> kept;
  kept.reserve(graph->nodes.size());
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (i >= remove.size() || !remove[i]) {
      kept.push_back(std::move(graph->nodes[i]));
    }
  }
  graph->nodes = std::move(kept);
}

std::string UniqueTensorName(const Graph& graph, const std::string& base) {
  absl::flat_hash_set<std::string> used;
  for (const ValueInfo& in : graph.inputs) used.insert(in.name);
  for (const auto& [name, t] : graph.initializers) used.insert(name);
  for (const Node& node : graph.nodes) {
    for (const std::string& out : node.outputs) used.insert(out);
  }
  if (!used.contains(base)) return base;
  for (int k = 1;; ++k) {
    std::string name = absl::StrCat(base, "_", k);
    if (!used.contains(name)) return name;
  }
}

}  // namespace quantd
