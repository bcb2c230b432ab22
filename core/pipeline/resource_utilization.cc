#include "core/pipeline/resource_utilization.h"

#include <algorithm>
#include <set>

namespace quantd {
namespace {

double Elements(const std::map<std::string, std::vector<int64_t>>& shapes,
                const std::string& name) {
  auto it = shapes.find(name);
  if (it == shapes.end()) return 0;
  int64_t n = NumElements(it->second);
  return n < 0 ? 0 : static_cast<double>(n);
}

}  // namespace

ResourceFigures ComputeResourceUtilization(
    const Model& model, const v1::QuantizedGraph& qg,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    int override_bits) {
  auto bits = [&](int b) { return override_bits > 0 ? override_bits : b; };
  const Graph& g = model.graph;
  std::map<std::string, const v1::QuantizedNode*> by_name;
  std::map<std::string, int> act_bits;  // quantized tensor -> bits
  for (const auto& a : qg.input_activations()) {
    act_bits[a.tensor()] = bits(a.n_bits());
  }
  for (const auto& n : qg.nodes()) {
    by_name[n.name()] = &n;
    for (const auto& a : n.activations())
      act_bits[a.tensor()] = bits(a.n_bits());
  }
  double weights = 0, bops = 0;
  for (const Node& node : g.nodes) {
    auto it = by_name.find(node.name);
    if (it == by_name.end()) continue;
    int kernel_bits = 0;
    for (const auto& w : it->second->weights()) {
      const Tensor* t = g.FindInitializer(node.Input(w.input_index()));
      if (t == nullptr) continue;
      weights += static_cast<double>(t->num_elements()) * bits(w.n_bits()) / 8;
      if (w.input_index() == 1) kernel_bits = bits(w.n_bits());
    }
    const bool linear = node.op_type == "Conv" ||
                        node.op_type == "ConvTranspose" ||
                        node.op_type == "Gemm" || node.op_type == "MatMul";
    if (!linear || node.outputs.empty()) continue;
    const Tensor* w = g.FindInitializer(node.Input(1));
    const double out = Elements(shapes, node.outputs[0]);
    if (w == nullptr || w->rank() < 2 || out == 0) continue;
    double macs = 0;
    if (node.op_type == "Conv") {
      macs = out * (static_cast<double>(w->num_elements()) / w->dim(0));
    } else if (node.op_type == "ConvTranspose") {
      macs = Elements(shapes, node.Input(0)) *
             (static_cast<double>(w->num_elements()) / w->dim(0));
    } else if (node.op_type == "Gemm") {
      const int64_t k = node.GetInt("transB", 0) ? w->dim(1) : w->dim(0);
      macs = out * k;
    } else {
      macs = out * w->dim(w->rank() - 2);
    }
    auto a = act_bits.find(node.Input(0));
    const int in_bits = a == act_bits.end() ? 32 : a->second;
    bops += macs * (kernel_bits > 0 ? kernel_bits : 32) * in_bits;
  }
  // Liveness over the topological schedule.
  std::map<std::string, int> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& in : g.nodes[i].inputs) last_use[in] = static_cast<int>(i);
  }
  for (const auto& out : g.outputs) {
    last_use[out.name] = static_cast<int>(g.nodes.size());
  }
  auto tensor_bytes = [&](const std::string& name) {
    auto it = act_bits.find(name);
    return it == act_bits.end() ? 0.0 : Elements(shapes, name) * it->second / 8;
  };
  std::set<std::string> live;
  for (const auto& in : g.inputs) live.insert(in.name);
  double activation = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& out : g.nodes[i].outputs) live.insert(out);
    double sum = 0;
    for (const auto& t : live) sum += tensor_bytes(t);
    activation = std::max(activation, sum);
    for (auto it = live.begin(); it != live.end();) {
      auto lu = last_use.find(*it);
      if (lu == last_use.end() || lu->second <= static_cast<int>(i)) {
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  ResourceFigures f;
  f.weights_memory_bytes = weights;
  f.activation_memory_bytes = activation;
  f.total_memory_bytes = weights + activation;
  f.bops = bops;
  return f;
}

v1::ResourceUtilization ToProto(const ResourceFigures& f) {
  v1::ResourceUtilization r;
  if (f.weights_memory_bytes) {
    r.set_weights_memory_bytes(*f.weights_memory_bytes);
  }
  if (f.activation_memory_bytes) {
    r.set_activation_memory_bytes(*f.activation_memory_bytes);
  }
  if (f.total_memory_bytes) r.set_total_memory_bytes(*f.total_memory_bytes);
  if (f.bops) r.set_bops(*f.bops);
  return r;
}

}  // namespace quantd
