#include "core/pipeline/mixed_precision/resource_utilization.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/mixed_precision/mixed_precision_resources.h"

namespace quantd {

mixed_precision::ResourceFigures ComputeResourceUtilization(
    const JobState& state,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    int override_bits, bool simd_padding) {
  auto bits = [&](int b) { return override_bits > 0 ? override_bits : b; };
  const Model& model = state.model;
  const Graph& g = model.graph;
  std::vector<std::string> tensors;
  std::vector<int> act_bits;
  std::vector<WeightRef> weights;
  std::vector<int> weight_bits, weight_simd;
  auto add_activation = [&](const ActivationParams& a) {
    tensors.push_back(a.tensor);
    act_bits.push_back(bits(a.n_bits));
  };
  for (const auto& in : g.inputs) {
    auto it = state.input_activations.find(in.name);
    if (it != state.input_activations.end()) add_activation(it->second);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodePlan& p = state.plans[i];
    if (p.quantize_activation) {
      add_activation(p.activation);
      for (const auto& a : p.extra_activations) add_activation(a);
    }
    for (const WeightParams& w : p.weight_results) {
      const bool kernel = w.input_index == 1;
      weights.push_back({static_cast<int>(i), w.input_index,
                         kernel && w.channel_axis >= 0 ? w.channel_axis : -1});
      weight_bits.push_back(bits(w.n_bits));
      weight_simd.push_back(simd_padding && kernel && p.config.has_simd_size()
                                ? p.config.simd_size()
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

std::vector<std::string> TargetOverrunWarnings(
    const mixed_precision::ResourceFigures& achieved,
    const mixed_precision::ResourceFigures& targets) {
  using F = std::optional<double> mixed_precision::ResourceFigures::*;
  const std::pair<const char*, F> kinds[] = {
      {"weights memory",
       &mixed_precision::ResourceFigures::weights_memory_bytes},
      {"activation memory",
       &mixed_precision::ResourceFigures::activation_memory_bytes},
      {"total memory", &mixed_precision::ResourceFigures::total_memory_bytes},
      {"BOPs", &mixed_precision::ResourceFigures::bops}};
  std::vector<std::string> warnings;
  for (const auto& [name, field] : kinds) {
    const auto& a = achieved.*field;
    const auto& t = targets.*field;
    if (!a || !t || *a <= *t) continue;
    warnings.push_back(
        absl::StrCat("mixed_precision: the quantized model's ", name, " ", *a,
                     " exceeds the target ", *t,
                     " (the search met it; tensors added after it, e.g. by "
                     "shift_negative_activation_correction, count too)"));
  }
  return warnings;
}

}  // namespace quantd
