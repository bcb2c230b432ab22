#include "core/pipeline/gptq/quantized_inputs_cache.h"

#include <algorithm>
#include <utility>

#include "core/graph/graph_edit.h"
#include "core/graph/transforms.h"

namespace quantd {

QuantizedInputsCache::QuantizedInputsCache(const Graph& graph, size_t samples,
                                           int64_t budget_bytes)
    : samples_(samples), budget_(budget_bytes) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& in : graph.nodes[i].inputs) {
      if (!in.empty()) last_reader_[in] = static_cast<int>(i);
    }
  }
}

bool QuantizedInputsCache::WorthKeeping(const std::string& tensor,
                                        int kernel_node) const {
  auto it = last_reader_.find(tensor);
  return it != last_reader_.end() && it->second >= kernel_node;
}

void QuantizedInputsCache::Update(
    int kernel_node, std::vector<std::map<std::string, Tensor>> produced) {
  std::map<std::string, int64_t> bytes;  // over all samples
  for (size_t s = 0; s < samples_.size(); ++s) {
    std::map<std::string, Tensor>& kept = samples_[s];
    for (auto it = kept.begin(); it != kept.end();) {
      it =
          WorthKeeping(it->first, kernel_node) ? std::next(it) : kept.erase(it);
    }
    if (s < produced.size()) {
      for (auto& [name, t] : produced[s]) kept[name] = std::move(t);
    }
    for (const auto& [name, t] : kept) bytes[name] += t.byte_size();
  }
  // Only names every sample holds (a run that failed part-way leaves some
  // without), within the budget, the largest dropped first.
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& entry : bytes) {
    const std::string& name = entry.first;
    const bool everywhere = std::all_of(
        samples_.begin(), samples_.end(),
        [&](const std::map<std::string, Tensor>& m) { return m.count(name); });
    if (everywhere) order.push_back({entry.second, name});
  }
  std::sort(order.begin(), order.end());
  std::set<std::string> names;
  int64_t total = 0;
  for (const auto& [b, name] : order) {
    if (total + b > budget_) break;
    total += b;
    names.insert(name);
  }
  for (std::map<std::string, Tensor>& kept : samples_) {
    for (auto it = kept.begin(); it != kept.end();) {
      it = names.count(it->first) ? std::next(it) : kept.erase(it);
    }
  }
}

std::map<std::string, DType> QuantizedInputsCache::Types() const {
  std::map<std::string, DType> types;
  if (samples_.empty()) return types;
  for (const auto& [name, t] : samples_[0]) types[name] = t.dtype();
  return types;
}

std::set<std::string> QuantizedInputsCache::names() const {
  std::set<std::string> names;
  for (const auto& entry : Types()) names.insert(entry.first);
  return names;
}

void QuantizedInputsCache::Clear() {
  for (std::map<std::string, Tensor>& kept : samples_) kept.clear();
}

bool KeepOnlyWhatProduces(const std::string& tensor,
                          const std::map<std::string, DType>& cached,
                          Graph* g) {
  for (const Node& n : g->nodes) {
    for (const auto& [name, attr] : n.attributes) {
      if (attr.g != nullptr) return false;
    }
  }
  std::set<std::string> needed = {tensor};
  std::vector<bool> remove(g->nodes.size(), true);
  std::set<std::string> read_cached, produced;
  for (size_t i = g->nodes.size(); i-- > 0;) {
    const Node& n = g->nodes[i];
    const bool produces =
        std::any_of(n.outputs.begin(), n.outputs.end(),
                    [&](const std::string& o) { return needed.count(o) > 0; });
    if (!produces) continue;
    remove[i] = false;
    produced.insert(n.outputs.begin(), n.outputs.end());
    for (const std::string& in : n.inputs) {
      if (in.empty()) continue;
      if (cached.count(in)) {
        read_cached.insert(in);
      } else {
        needed.insert(in);
      }
    }
  }
  RemoveNodes(g, remove);
  // A cached tensor that a kept node computes anyway (another output of it
  // is needed) is not fed: one name, one source.
  for (const std::string& name : read_cached) {
    if (produced.count(name)) continue;
    ValueInfo in;
    in.name = name;
    in.dtype = cached.at(name);
    g->inputs.push_back(in);
  }
  ValueInfo out;
  out.name = tensor;
  auto it = g->value_info.find(tensor);
  if (it != g->value_info.end()) out = it->second;
  g->outputs = {out};
  RemoveUnusedInitializers(g);
  return true;
}

}  // namespace quantd
