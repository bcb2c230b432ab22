#include "core/graph/validation.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/mctq_ops.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

absl::Status CheckValueInfo(const ValueInfo& info, const char* what) {
  if (!IsKnownDType(static_cast<int32_t>(info.dtype))) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", info.name, "': unknown dtype ",
                     static_cast<int32_t>(info.dtype)));
  }
  if (info.has_shape && info.dim_params.size() != info.shape.size() &&
      !info.dim_params.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", info.name, "': dim_params and shape differ in length"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsKnownDType(int32_t value) { return value >= 0 && value <= 26; }

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

absl::Status TopologicalSort(Graph* graph) {
  const size_t n = graph->nodes.size();
  absl::flat_hash_map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& out : graph->nodes[i].outputs) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  // Inputs read by nested subgraphs count as dependencies of the node that
  // owns the subgraph.
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<int> pending(n, 0);
  auto add_edges = [&](size_t i, const auto& self, const Graph& g,
                       absl::flat_hash_set<size_t>* seen) -> void {
    for (const Node& node : g.nodes) {
      for (const std::string& in : node.inputs) {
        auto it = producer.find(in);
        if (it != producer.end() && it->second != i &&
            seen->insert(it->second).second) {
          consumers[it->second].push_back(i);
          ++pending[i];
        }
      }
      for (const auto& [key, attr] : node.attributes) {
        if (attr.g) self(i, self, *attr.g, seen);
      }
    }
  };
  for (size_t i = 0; i < n; ++i) {
    absl::flat_hash_set<size_t> seen;
    const Node& node = graph->nodes[i];
    for (const std::string& in : node.inputs) {
      auto it = producer.find(in);
      if (it == producer.end()) continue;
      if (it->second == i) {
        return absl::InvalidArgumentError(absl::StrCat(
            node.Label(), ": cycle (reads its own output '", in, "')"));
      }
      if (seen.insert(it->second).second) {
        consumers[it->second].push_back(i);
        ++pending[i];
      }
    }
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) add_edges(i, add_edges, *attr.g, &seen);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] > 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(graph->nodes[i].Label(), ": is part of a cycle"));
      }
    }
  }
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) sorted &= order[i] == i;
  if (sorted) return absl::OkStatus();
  std::vector<Node> nodes;
  nodes.reserve(n);
  for (size_t i : order) nodes.push_back(std::move(graph->nodes[i]));
  graph->nodes = std::move(nodes);
  return absl::OkStatus();
}

absl::Status ValidateGraph(Graph* graph,
                           const std::vector<std::string>& outer_scope) {
  absl::flat_hash_set<std::string> outer(outer_scope.begin(),
                                         outer_scope.end());
  // name -> what defines it, for duplicate-definition messages.
  absl::flat_hash_map<std::string, std::string> defined;
  for (const ValueInfo& in : graph->inputs) {
    RETURN_IF_ERROR(CheckValueInfo(in, "graph input"));
    if (!defined.emplace(in.name, "a graph input").second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", in.name, "' is listed twice"));
    }
  }
  for (const auto& [name, tensor] : graph->initializers) {
    if (!tensor.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("initializer '", name, "' has no data"));
    }
    if (!defined.emplace(name, "an initializer").second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initializer '", name, "' has the name of a graph input"));
    }
  }
  for (const auto& [name, type] : graph->sub_byte_types) {
    const Tensor* t = graph->FindInitializer(name);
    const DType storage = type == DType::kInt4 ? DType::kInt8 : DType::kUint8;
    if (t == nullptr || (type != DType::kInt4 && type != DType::kUint4) ||
        t->dtype() != storage) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initializer '", name, "': sub-byte type ", DTypeName(type),
          " needs an ", DTypeName(storage), " initializer"));
    }
  }
  for (const ValueInfo& out : graph->outputs) {
    RETURN_IF_ERROR(CheckValueInfo(out, "graph output"));
  }
  for (const auto& [name, info] : graph->value_info) {
    RETURN_IF_ERROR(CheckValueInfo(info, "value_info"));
  }
  absl::flat_hash_set<std::string> node_names;
  for (const Node& node : graph->nodes) {
    if (node.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("a node of type ", node.op_type, " has no name"));
    }
    if (!node_names.insert(node.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": node name is not unique"));
    }
    if (node.op_type.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "': empty op_type"));
    }
    if (!IsDefaultDomain(node.domain) &&
        !IsMctqQuantizerOp(node.domain, node.op_type)) {
      return absl::UnimplementedError(
          absl::StrCat(node.Label(), ": domain '", node.domain,
                       "' is not supported (only the default ONNX domain and "
                       "mct_quantizers' quantizer ops are)"));
    }
    if (IsMctqQuantizerOp(node.domain, node.op_type) &&
        (node.Input(0).empty() || node.outputs.size() != 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": needs input 0 and exactly one output"));
    }
    // Every ONNX op computes something: a node without a named output is
    // malformed (or dead), and later stages read its outputs.
    if (std::none_of(node.outputs.begin(), node.outputs.end(),
                     [](const std::string& o) { return !o.empty(); })) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": the node has no output"));
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      auto [it, inserted] = defined.emplace(out, node.Label());
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Label(), ": output '", out,
                         "' is already produced by ", it->second));
      }
    }
  }
  for (const Node& node : graph->nodes) {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty() || defined.contains(in) || outer.contains(in)) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": input ", k, " '", in,
                       "' is not produced by any node, input or initializer"));
    }
  }
  for (const ValueInfo& out : graph->outputs) {
    if (!defined.contains(out.name) && !outer.contains(out.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", out.name, "' is not produced by any node"));
    }
  }
  RETURN_IF_ERROR(TopologicalSort(graph));

  // Subgraphs see everything visible here.
  bool has_subgraph = false;
  for (const Node& node : graph->nodes) {
    for (const auto& [key, attr] : node.attributes)
      has_subgraph |= attr.g != nullptr;
  }
  if (!has_subgraph) return absl::OkStatus();
  std::vector<std::string> scope = outer_scope;
  for (const auto& [name, what] : defined) scope.push_back(name);
  for (Node& node : graph->nodes) {
    for (auto& [key, attr] : node.attributes) {
      if (!attr.g) continue;
      absl::Status s = ValidateGraph(attr.g.get(), scope);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat(node.Label(), ": subgraph '",
                                                   key, "': ", s.message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateModel(Model* model) {
  if (model->DefaultOpset() <= 0) {
    return absl::InvalidArgumentError(
        "opset_import: the default ONNX domain is not imported");
  }
  return ValidateGraph(&model->graph);
}

}  // namespace quantd
