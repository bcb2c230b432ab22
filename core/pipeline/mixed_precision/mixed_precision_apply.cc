// The setter of the mixed-precision stage (MCT's set_layer_to_bitwidth):
// writes the chosen candidate of every node back into its plan.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/pipeline/mixed_precision/internal/mixed_precision_space.h"

namespace quantd::mp_internal {
namespace {

// Re-derives the parameters of quantization-preserving nodes from their
// (possibly re-selected) sources, in topological order.
void PropagatePreserved(JobState* state) {
  const Graph& g = state->model.graph;
  std::map<std::string, const ActivationParams*> by_tensor;
  for (auto& [name, a] : state->input_activations) by_tensor[name] = &a;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = state->plans[i];
    if (p.preserving && p.quantize_activation) {
      auto it = by_tensor.find(p.preserved_from);
      if (it != by_tensor.end()) {
        p.activation = *it->second;
        p.activation.tensor = g.nodes[i].outputs[0];
        p.activation.preserved_from = p.preserved_from;
      }
    }
    if (p.quantize_activation && !g.nodes[i].outputs.empty()) {
      by_tensor[g.nodes[i].outputs[0]] = &p.activation;
    }
  }
}

}  // namespace

void ApplyChosenCandidates(const std::vector<NodeSpace>& spaces,
                           JobState* state, MixedPrecisionOutcome* outcome) {
  const Graph& g = state->model.graph;
  for (const NodeSpace& sp : spaces) {
    NodePlan& p = state->plans[sp.node];
    const int j = sp.chosen;
    const int c = sp.configs[j];
    v1::OpQuantizationConfig chosen = p.qco.quantization_configurations(c);
    if (p.fused_inner) {  // the fusing's activation settings stay
      chosen.set_activation_quantization_method(
          p.config.activation_quantization_method());
      chosen.set_activation_n_bits(p.config.activation_n_bits());
      chosen.set_signedness(p.config.signedness());
      chosen.set_enable_activation_quantization(
          p.config.enable_activation_quantization());
    }
    p.candidate_index = c;
    p.config = chosen;
    p.weights = sp.slots[j];
    p.weight_results = sp.weight_results[j];
    if (sp.activation_results[j]) p.activation = *sp.activation_results[j];
    if (!sp.sensitivity.empty()) {
      std::vector<double> per_config(p.qco.quantization_configurations_size(),
                                     -1.0);
      for (size_t k = 0; k < sp.configs.size(); ++k) {
        per_config[sp.configs[k]] = sp.sensitivity[k];
      }
      outcome->sensitivity[g.nodes[sp.node].name] = std::move(per_config);
    }
  }
  PropagatePreserved(state);
}

}  // namespace quantd::mp_internal
