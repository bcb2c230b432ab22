#include "core/pipeline/evaluation/paired_models.h"

#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace quantd {
namespace {

std::string Prefixed(const std::string& name) {
  return name.empty() ? name : absl::StrCat(kFloatPrefix, name);
}

bool HasSubgraph(const Graph& g) {
  for (const Node& n : g.nodes) {
    for (const auto& [key, a] : n.attributes) {
      if (a.type == Attribute::Type::kGraph || a.g != nullptr) return true;
    }
  }
  return false;
}

// Whether any name of `g` already starts with the prefix (the float side's
// names would then collide with, or be mistaken for, other names).
bool UsesPrefix(const Graph& g) {
  auto used = [](const std::string& name) {
    return absl::StartsWith(name, kFloatPrefix);
  };
  for (const auto& [name, t] : g.initializers) {
    if (used(name)) return true;
  }
  for (const ValueInfo& v : g.inputs) {
    if (used(v.name)) return true;
  }
  for (const ValueInfo& v : g.outputs) {
    if (used(v.name)) return true;
  }
  for (const Node& n : g.nodes) {
    if (used(n.name)) return true;
    for (const std::string& s : n.inputs) {
      if (used(s)) return true;
    }
    for (const std::string& s : n.outputs) {
      if (used(s)) return true;
    }
  }
  return false;
}

// The float graph with every name prefixed.
Graph PrefixedGraph(const Graph& g) {
  Graph out;
  out.name = g.name;
  for (const auto& [name, t] : g.initializers) {
    out.initializers[Prefixed(name)] = t;  // shares the buffer
  }
  for (const auto& [name, type] : g.sub_byte_types) {
    out.sub_byte_types[Prefixed(name)] = type;
  }
  for (ValueInfo v : g.inputs) {
    v.name = Prefixed(v.name);
    out.inputs.push_back(std::move(v));
  }
  for (ValueInfo v : g.outputs) {
    v.name = Prefixed(v.name);
    out.outputs.push_back(std::move(v));
  }
  for (const auto& [name, v] : g.value_info) {
    ValueInfo p = v;
    p.name = Prefixed(name);
    out.value_info[p.name] = std::move(p);
  }
  for (Node n : g.nodes) {
    n.name = Prefixed(n.name);
    for (std::string& s : n.inputs) s = Prefixed(s);
    for (std::string& s : n.outputs) s = Prefixed(s);
    out.nodes.push_back(std::move(n));
  }
  return out;
}

}  // namespace

bool PairedModels::CanPair(const Graph& g) {
  return !HasSubgraph(g) && !UsesPrefix(g);
}

absl::StatusOr<std::unique_ptr<PairedModels>> PairedModels::Create(
    const Model& float_model, const Model& fake_quant_model,
    const ExecutorOptions& options) {
  const Graph& fg = float_model.graph;
  const Graph& qg = fake_quant_model.graph;
  if (float_model.opset_import != fake_quant_model.opset_import ||
      !CanPair(fg) || !CanPair(qg)) {
    return nullptr;
  }
  Graph floats = PrefixedGraph(fg);
  Model paired = fake_quant_model;
  Graph& g = paired.graph;
  for (auto& [name, t] : floats.initializers) g.initializers[name] = t;
  for (auto& [name, type] : floats.sub_byte_types)
    g.sub_byte_types[name] = type;
  for (auto& [name, v] : floats.value_info) g.value_info[name] = v;
  g.inputs.insert(g.inputs.end(), floats.inputs.begin(), floats.inputs.end());
  g.outputs.insert(g.outputs.end(), floats.outputs.begin(),
                   floats.outputs.end());
  // The float node producing a tensor, by its unprefixed name.
  std::unordered_map<std::string, size_t> float_producer;
  for (size_t i = 0; i < fg.nodes.size(); ++i) {
    for (const std::string& o : fg.nodes[i].outputs) {
      if (!o.empty()) float_producer.emplace(o, i);
    }
  }
  // Each side in its own order (the two never read each other's tensors,
  // so any merge of two topological orders is one): before a fake-quant
  // node, the float nodes up to the producer of the same tensor.
  std::vector<Node> nodes;
  nodes.reserve(fg.nodes.size() + qg.nodes.size());
  size_t next_float = 0;
  for (const Node& q : qg.nodes) {
    for (const std::string& o : q.outputs) {
      auto it = float_producer.find(o);
      if (it == float_producer.end()) continue;
      while (next_float <= it->second) {
        nodes.push_back(std::move(floats.nodes[next_float++]));
      }
    }
    nodes.push_back(q);
  }
  while (next_float < floats.nodes.size()) {
    nodes.push_back(std::move(floats.nodes[next_float++]));
  }
  g.nodes = std::move(nodes);
  absl::StatusOr<std::unique_ptr<Executor>> exec =
      Executor::Create(std::move(paired), options);
  if (!exec.ok()) return exec.status();
  return std::unique_ptr<PairedModels>(new PairedModels(*std::move(exec)));
}

absl::StatusOr<PairedModels::Outputs> PairedModels::Run(
    const std::map<std::string, Tensor>& float_feeds,
    std::map<std::string, Tensor> fake_quant_feeds,
    const FloatObserver& float_observer, RunOptions options) const {
  const TensorObserver* fake_quant_observer = options.observer;
  const TensorObserver both = [&](const Node& node, int k, const Tensor& v) {
    absl::string_view original;
    if (FloatSide(node.outputs[k], &original)) {
      if (float_observer) float_observer(std::string(original), v);
    } else if (fake_quant_observer != nullptr) {
      (*fake_quant_observer)(node, k, v);
    }
  };
  options.observer = &both;
  auto out =
      executor_->Run(Feeds(float_feeds, std::move(fake_quant_feeds)), options);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrReplaceAll(out.status().message(),
                                            {{kFloatPrefix, "float "}}));
  }
  Outputs split;
  for (auto& [name, t] : *out) {
    absl::string_view original;
    if (FloatSide(name, &original)) {
      split.float_side[std::string(original)] = std::move(t);
    } else {
      split.fake_quant[name] = std::move(t);
    }
  }
  return split;
}

std::map<std::string, Tensor> PairedModels::Feeds(
    const std::map<std::string, Tensor>& float_feeds,
    std::map<std::string, Tensor> fake_quant_feeds) const {
  for (const auto& [name, t] : float_feeds) {
    fake_quant_feeds[Prefixed(name)] = t;
  }
  return fake_quant_feeds;
}

bool PairedModels::FloatSide(absl::string_view name,
                             absl::string_view* original) {
  if (!absl::StartsWith(name, kFloatPrefix)) return false;
  *original = name.substr(kFloatPrefix.size());
  return true;
}

}  // namespace quantd
