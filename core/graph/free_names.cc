#include "core/graph/free_names.h"

#include <utility>

namespace quantd {

void CollectFreeNames(const Graph& g, std::set<std::string>* out) {
  std::set<std::string> defined;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes) {
    for (const std::string& o : n.outputs) defined.insert(o);
  }
  std::set<std::string> used;
  for (const Node& n : g.nodes) {
    for (const std::string& i : n.inputs) {
      if (!i.empty()) used.insert(i);
    }
    for (const auto& [key, attr] : n.attributes) {
      if (attr.type == Attribute::Type::kGraph && attr.g) {
        CollectFreeNames(*attr.g, &used);
      }
    }
  }
  for (const std::string& name : used) {
    if (!defined.count(name)) out->insert(name);
  }
  for (const ValueInfo& v : g.outputs) {
    if (!defined.count(v.name)) out->insert(v.name);
  }
}

std::vector<std::string> ImplicitInputs(const Node& n) {
  std::set<std::string> names;
  for (const auto& [key, attr] : n.attributes) {
    if (attr.type == Attribute::Type::kGraph && attr.g) {
      CollectFreeNames(*attr.g, &names);
    }
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> NodeReads(const Node& n) {
  std::vector<std::string> reads;
  for (const std::string& i : n.inputs) {
    if (!i.empty()) reads.push_back(i);
  }
  for (std::string& i : ImplicitInputs(n)) reads.push_back(std::move(i));
  return reads;
}

}  // namespace quantd
