#include "core/pipeline/mixed_precision/resource_utilization.h"

#include "core/pipeline/mixed_precision/mixed_precision_resources.h"

namespace quantd {

mixed_precision::ResourceFigures ComputeResourceUtilization(
    const Model& model, const v1::QuantizedGraph& qg,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    int override_bits, bool simd_padding) {
  auto bits = [&](int b) { return override_bits > 0 ? override_bits : b; };
  const Graph& g = model.graph;
  std::map<std::string, int> node_index;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    node_index[g.nodes[i].name] = static_cast<int>(i);
  }
  std::vector<std::string> tensors;
  std::vector<int> act_bits;
  std::vector<WeightRef> weights;
  std::vector<int> weight_bits, weight_simd;
  for (const auto& a : qg.input_activations()) {
    tensors.push_back(a.tensor());
    act_bits.push_back(bits(a.n_bits()));
  }
  for (const auto& n : qg.nodes()) {
    for (const auto& a : n.activations()) {
      tensors.push_back(a.tensor());
      act_bits.push_back(bits(a.n_bits()));
    }
    auto it = node_index.find(n.name());
    if (it == node_index.end()) continue;
    for (const auto& w : n.weights()) {
      const bool kernel = w.input_index() == 1;
      weights.push_back(
          {it->second, w.input_index(),
           kernel && w.channel_axis() >= 0 ? w.channel_axis() : -1});
      weight_bits.push_back(bits(w.n_bits()));
      weight_simd.push_back(simd_padding && kernel && n.config().has_simd_size()
                                ? n.config().simd_size()
                                : 0);
    }
  }
  const ResourceLayout layout =
      BuildResourceLayout(model, shapes, tensors, weights);
  // The layout drops duplicate tensors and weights it cannot find; map the
  // bits through names.
  ResourceBits rb;
  std::map<std::string, int> bits_of_tensor;
  for (size_t i = 0; i < tensors.size(); ++i) {
    bits_of_tensor.emplace(tensors[i], act_bits[i]);
  }
  for (const auto& a : layout.activations) {
    rb.activation_bits.push_back(bits_of_tensor[a.tensor]);
  }
  std::map<std::pair<int, int>, std::pair<int, int>> bits_of_weight;
  for (size_t i = 0; i < weights.size(); ++i) {
    bits_of_weight[{weights[i].node, weights[i].input_index}] = {
        weight_bits[i], weight_simd[i]};
  }
  for (const auto& w : layout.weights) {
    const auto& b = bits_of_weight[{w.ref.node, w.ref.input_index}];
    rb.weight_bits.push_back(b.first);
    rb.weight_simd.push_back(b.second);
  }
  const ResourceBreakdown r = EvaluateResources(layout, rb);
  mixed_precision::ResourceFigures f;
  f.weights_memory_bytes = r.weights;
  f.activation_memory_bytes = r.activation;
  f.total_memory_bytes = r.total;
  f.bops = r.bops;
  return f;
}

v1::ResourceUtilization ToProto(const mixed_precision::ResourceFigures& f) {
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
