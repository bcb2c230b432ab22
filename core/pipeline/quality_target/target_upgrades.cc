#include "core/pipeline/quality_target/target_upgrades.h"

#include <algorithm>

#include "core/graph/graph_index.h"
#include "core/pipeline/mixed_precision/consumer_input_bits.h"
#include "core/pipeline/prep/node_filter.h"
#include "core/pipeline/prep/op_config_bits.h"
#include "core/tpc/attribute_names.h"

namespace quantd {
namespace {

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= std::max<int64_t>(d, 1);
  return n;
}

bool Pinned(const Node& node, const MixedPrecisionOptions& options) {
  for (const BitWidthOverride& o : options.overrides) {
    if (MatchesNodeFilter(o.filter, node)) return true;
  }
  return false;
}

}  // namespace

std::vector<BitUpgrade> ListBitUpgrades(
    const JobState& state,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const MixedPrecisionOptions& user_options) {
  const Graph& g = state.model.graph;
  GraphIndex index(g);
  std::vector<BitUpgrade> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodePlan& p = state.plans[i];
    const Node& node = g.nodes[i];
    if (Pinned(node, user_options)) continue;
    const WeightSlot* kernel = nullptr;
    for (const WeightSlot& w : p.weights) {
      if (w.attr == tpc::kKernelAttr) kernel = &w;
    }
    const bool has_act =
        p.quantize_activation && !p.preserving && !p.fused_inner;
    const int wb = kernel != nullptr ? KernelBits(p.config) : 0;
    const int ab = has_act ? p.config.activation_n_bits() : 0;
    int best_a = ab, best_w = wb;
    const int limit =
        has_act ? ConsumerInputLimit(g, index, state.plans, static_cast<int>(i))
                : 0;
    for (const auto& cfg : p.qco.quantization_configurations()) {
      const int cw = kernel != nullptr ? KernelBits(cfg) : 0;
      const bool act_ok = cfg.enable_activation_quantization();
      if (has_act && act_ok && cw == wb && cfg.activation_n_bits() <= limit) {
        best_a = std::max(best_a, cfg.activation_n_bits());
      }
      if (kernel != nullptr && cw > 0 && cw <= kMaxWeightBits &&
          (!has_act || (act_ok && cfg.activation_n_bits() == ab))) {
        best_w = std::max(best_w, cw);
      }
    }
    if (has_act && best_a > ab) {
      auto it = shapes.find(node.outputs[0]);
      const int64_t n = it != shapes.end() ? Elements(it->second) : 0;
      out.push_back({static_cast<int>(i), node.name, false, ab, best_a,
                     n * (best_a - ab) / 8.0});
    }
    // Both moves of a node together need a candidate with both widths.
    bool both_fit = !(has_act && best_a > ab);
    for (const auto& cfg : p.qco.quantization_configurations()) {
      if (KernelBits(cfg) == best_w && cfg.enable_activation_quantization() &&
          cfg.activation_n_bits() == best_a) {
        both_fit = true;
      }
    }
    if (kernel != nullptr && wb > 0 && best_w > wb && both_fit) {
      const Tensor* w = g.FindInitializer(node.Input(kernel->input_index));
      const int64_t n = w != nullptr ? w->num_elements() : 0;
      out.push_back({static_cast<int>(i), node.name, true, wb, best_w,
                     n * (best_w - wb) / 8.0});
    }
  }
  return out;
}

MixedPrecisionOptions OverridesFor(const std::vector<BitUpgrade>& upgrades) {
  MixedPrecisionOptions options;
  for (const BitUpgrade& u : upgrades) {
    options.overrides.push_back(
        {{NodeFilter::By::kName, u.node_name}, u.weights, u.to_bits});
  }
  return options;
}

}  // namespace quantd
