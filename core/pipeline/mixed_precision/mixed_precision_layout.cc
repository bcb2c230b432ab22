// The resource layout the mixed-precision candidates are priced on: which
// node decides the bits of every weight and activation entry, and the bits
// of those entries under the plan or under one node's candidate.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "core/pipeline/mixed_precision/internal/mixed_precision_space.h"

namespace quantd::mp_internal {

namespace mp = ::quantd::mixed_precision;

const v1::AttributeQuantizationConfig& SlotConfig(
    const v1::OpQuantizationConfig& c, const WeightSlot& slot) {
  const auto& mapping = c.attr_weights_configs_mapping();
  if (slot.attr != "pos_attr") {
    auto it = mapping.find(slot.attr);
    return it != mapping.end() ? it->second : c.default_weight_attr_config();
  }
  for (const auto& [attr, cfg] : mapping) {
    if (absl::StrContains(attr, "pos_attr")) return cfg;
  }
  return c.default_weight_attr_config();
}

bool SlotQuantized(const v1::AttributeQuantizationConfig& c) {
  return c.enable_weights_quantization() &&
         c.weights_n_bits() <= kMaxWeightBits;
}

PlanLayout BuildPlanLayout(
    const JobState& state,
    const std::map<std::string, std::vector<int64_t>>& shapes) {
  const Graph& g = state.model.graph;
  std::vector<std::string> tensors;
  std::map<std::string, int> owner;
  for (const auto& [name, a] : state.input_activations) {
    tensors.push_back(name);
    owner[name] = -1;
  }
  std::vector<WeightRef> refs;
  std::map<std::pair<int, int>, std::pair<int, int>> slot_of;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodePlan& p = state.plans[i];
    if (p.quantize_activation && !g.nodes[i].outputs.empty()) {
      const std::string& out = g.nodes[i].outputs[0];
      tensors.push_back(out);
      int o = static_cast<int>(i);
      if (p.preserving) {
        auto it = owner.find(p.preserved_from);
        o = it == owner.end() ? -1 : it->second;
      }
      owner[out] = o;
    }
    for (size_t s = 0; s < p.weights.size(); ++s) {
      const WeightSlot& w = p.weights[s];
      refs.push_back({static_cast<int>(i), w.input_index,
                      w.input_index == 1 ? w.channel_axis : -1});
      slot_of[{static_cast<int>(i), w.input_index}] = {static_cast<int>(i),
                                                       static_cast<int>(s)};
    }
  }
  PlanLayout pl;
  pl.layout = BuildResourceLayout(state.model, shapes, tensors, refs);
  for (const auto& w : pl.layout.weights) {
    pl.weight_slot.push_back(slot_of[{w.ref.node, w.ref.input_index}]);
  }
  for (const auto& a : pl.layout.activations) {
    pl.activation_owner.push_back(owner[a.tensor]);
  }
  return pl;
}

// Bits of every layout entry under the plan's current configs, with
// `override_bits` > 0 replacing every width (the 8-bit baseline).
ResourceBits CurrentBits(const PlanLayout& pl, const JobState& state,
                         bool simd_padding, int override_bits) {
  ResourceBits b;
  const Graph& g = state.model.graph;
  std::map<std::string, int> act_bits;
  for (const auto& [name, a] : state.input_activations) {
    act_bits[name] =
        state.input_config ? state.input_config->activation_n_bits() : 8;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodePlan& p = state.plans[i];
    if (p.quantize_activation && !g.nodes[i].outputs.empty()) {
      act_bits[g.nodes[i].outputs[0]] = p.activation.n_bits > 0
                                            ? p.activation.n_bits
                                            : p.config.activation_n_bits();
    }
  }
  for (const auto& a : pl.layout.activations) {
    b.activation_bits.push_back(override_bits > 0 ? override_bits
                                                  : act_bits[a.tensor]);
  }
  for (const auto& [node, slot] : pl.weight_slot) {
    const NodePlan& p = state.plans[node];
    const WeightSlot& w = p.weights[slot];
    b.weight_bits.push_back(override_bits > 0 ? override_bits
                                              : w.config.weights_n_bits());
    b.weight_simd.push_back(simd_padding && w.input_index == 1 &&
                                    p.config.has_simd_size()
                                ? p.config.simd_size()
                                : 0);
  }
  return b;
}

// Sets node `space`'s layout entries to candidate `k`.
void SetCandidateBits(const PlanLayout& pl, const JobState& state,
                      const NodeSpace& space, int k, bool simd_padding,
                      ResourceBits* bits) {
  const auto& c =
      state.plans[space.node].qco.quantization_configurations(space.configs[k]);
  for (size_t w = 0; w < pl.weight_slot.size(); ++w) {
    if (pl.weight_slot[w].first != space.node) continue;
    const WeightSlot& slot =
        state.plans[space.node].weights[pl.weight_slot[w].second];
    const auto& sc = SlotConfig(c, slot);
    bits->weight_bits[w] = SlotQuantized(sc) ? sc.weights_n_bits() : 0;
    bits->weight_simd[w] =
        simd_padding && slot.input_index == 1 && c.has_simd_size()
            ? c.simd_size()
            : 0;
  }
  if (space.activation_configurable) {
    for (size_t a = 0; a < pl.activation_owner.size(); ++a) {
      if (pl.activation_owner[a] == space.node) {
        bits->activation_bits[a] = c.activation_n_bits();
      }
    }
  }
}

std::vector<double> Elements(const ResourceBreakdown& r, mp::ResourceTarget t) {
  switch (t) {
    case mp::ResourceTarget::kWeights:
      return {r.weights};
    case mp::ResourceTarget::kActivation:
      return r.cut_activation.empty() ? std::vector<double>{0.0}
                                      : r.cut_activation;
    case mp::ResourceTarget::kTotal: {
      if (r.cut_activation.empty()) return {r.weights};
      std::vector<double> v;
      for (double c : r.cut_activation) v.push_back(c + r.weights);
      return v;
    }
    case mp::ResourceTarget::kBops:
      return {r.bops};
  }
  return {};
}

}  // namespace quantd::mp_internal
