// The candidates of the mixed-precision search (MCT's configuration
// filtering): which TPC candidates every node may take, and the parameters
// selected for each of them.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/graph_index.h"
#include "core/pipeline/mixed_precision/consumer_input_bits.h"
#include "core/pipeline/mixed_precision/internal/mixed_precision_space.h"
#include "core/pipeline/prep/node_filter.h"
#include "core/pipeline/prep/op_config_bits.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/quantizers/primitives.h"
#include "core/tpc/attribute_names.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/message_differencer.h"

namespace quantd::mp_internal {
namespace {

// The error for a node whose overrides no candidate fits, with the bits its
// candidates offer.
absl::Status NoFittingCandidateError(const MixedPrecisionOptions& options,
                                     const std::vector<int>& overrides,
                                     const Node& node, const NodePlan& p) {
  const auto& configs = p.qco.quantization_configurations();
  std::set<int> w_have, a_have;
  for (const auto& cfg : configs) {
    if (KernelBits(cfg) > 0) w_have.insert(KernelBits(cfg));
    if (cfg.enable_activation_quantization()) {
      a_have.insert(cfg.activation_n_bits());
    }
  }
  std::vector<std::string> asked;
  for (int k : overrides) {
    const BitWidthOverride& o = options.overrides[k];
    asked.push_back(absl::StrCat("bit_width_overrides[", k, "] ",
                                 o.weights ? "weights" : "activation", "=",
                                 o.bits));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "mixed_precision: ", node.Label(), ": no candidate of op set '", p.op_set,
      "' fits ", absl::StrJoin(asked, ", "),
      " (weights bits: ", absl::StrJoin(w_have, ", "),
      "; activation bits: ", absl::StrJoin(a_have, ", "), ")"));
}

// The Add shift-negative correction inserted after node `n`, or -1.
int ShiftNegativeAddAfter(const Graph& g, const GraphIndex& index,
                          const std::vector<NodePlan>& plans, int n) {
  const int next = index.SoleConsumer(n);
  return next >= 0 && g.nodes[next].op_type == "Add" &&
                 plans[next].fixed_threshold.has_value()
             ? next
             : -1;
}

// The overrides that select node `n`. An activation override of a node
// shift-negative correction pinned at 16 bits selects its Add instead,
// which carries the grid the node had.
std::vector<int> NodeOverrides(const MixedPrecisionOptions& options,
                               const Graph& g, const GraphIndex& index,
                               const std::vector<NodePlan>& plans, int n) {
  const Node& node = g.nodes[n];
  const bool pinned = ShiftNegativeAddAfter(g, index, plans, n) >= 0;
  int corrected = -1;
  if (plans[n].fixed_threshold.has_value()) {
    corrected = index.Producer(node.Input(0));
  }
  std::vector<int> out;
  for (int k = 0; k < static_cast<int>(options.overrides.size()); ++k) {
    const BitWidthOverride& o = options.overrides[k];
    const bool activation = !o.weights;
    if (MatchesNodeFilter(o.filter, node)) {
      if (!(pinned && activation)) out.push_back(k);
    } else if (activation && corrected >= 0 &&
               MatchesNodeFilter(o.filter, g.nodes[corrected])) {
      out.push_back(k);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<NodeSpace>> BuildNodeSpaces(
    const MixedPrecisionOptions& options, const SearchScope& scope,
    JobState* state) {
  const bool search = scope.search;
  const bool weights_only = scope.weights_only;
  const bool activation_only = scope.activation_only;
  Graph& g = state->model.graph;
  const int n = static_cast<int>(g.nodes.size());
  GraphIndex index(g);
  std::vector<NodeSpace> spaces;
  std::vector<bool> override_used(options.overrides.size(), false);
  for (int i = 0; i < n; ++i) {
    NodePlan& p = state->plans[i];
    const Node& node = g.nodes[i];
    int kernel_slot = -1;
    for (size_t s = 0; s < p.weights.size(); ++s) {
      if (p.weights[s].attr == tpc::kKernelAttr)
        kernel_slot = static_cast<int>(s);
    }
    const bool has_kernel = kernel_slot >= 0;
    const bool has_act =
        p.quantize_activation && !p.preserving && !p.fused_inner;
    if (!has_kernel && !has_act) continue;
    const int limit =
        has_act ? ConsumerInputLimit(g, index, state->plans, i) : (1 << 30);
    const auto& configs = p.qco.quantization_configurations();
    const std::vector<int> overrides =
        NodeOverrides(options, g, index, state->plans, i);
    NodeSpace space;
    space.node = i;
    std::set<std::pair<int, int>> seen;
    // The current (base) candidate first, so it wins among duplicates.
    std::vector<int> order = {p.candidate_index};
    for (int c = 0; c < configs.size(); ++c) {
      if (c != p.candidate_index) order.push_back(c);
    }
    for (int c : order) {
      if (c < 0 || c >= configs.size()) continue;
      const auto& cfg = configs[c];
      const int wb = has_kernel ? KernelBits(cfg) : 0;
      const int ab = has_act ? cfg.activation_n_bits() : 0;
      if (has_kernel && (wb == 0 || wb > kMaxWeightBits)) continue;
      if (has_act && (!cfg.enable_activation_quantization() || ab > limit)) {
        continue;
      }
      if (weights_only && has_act && ab != p.config.activation_n_bits()) {
        continue;
      }
      if (activation_only && has_kernel && wb != KernelBits(p.config)) {
        continue;
      }
      if (!search) {
        // Overrides only: the non-overridden dimension keeps its bits.
        bool w_over = false, a_over = false;
        for (int k : overrides) {
          (options.overrides[k].weights ? w_over : a_over) = true;
        }
        if (has_kernel && !w_over && wb != KernelBits(p.config)) continue;
        if (has_act && !a_over && ab != p.config.activation_n_bits()) continue;
      }
      bool ok = true;
      for (int k : overrides) {
        const BitWidthOverride& o = options.overrides[k];
        if (o.weights) {
          if (has_kernel && wb != o.bits) ok = false;
        } else if (has_act && ab != o.bits) {
          ok = false;
        }
      }
      if (!ok) continue;
      if (!seen.insert({wb, ab}).second) continue;
      space.configs.push_back(c);
      space.bits.push_back({wb, ab});
    }
    for (int k : overrides) {
      const bool applies = options.overrides[k].weights ? has_kernel : has_act;
      if (applies) override_used[k] = true;
    }
    if (space.configs.empty()) {
      if (overrides.empty()) continue;  // nothing fits: keep the base config
      return NoFittingCandidateError(options, overrides, node, p);
    }
    std::set<int> wset, aset;
    for (const auto& b : space.bits) {
      wset.insert(b.weights_bits);
      aset.insert(b.activation_bits);
    }
    space.weights_configurable = has_kernel && (wset.size() > 1 || !search);
    space.activation_configurable = has_act && (aset.size() > 1 || !search);
    if (space.configs.size() == 1 && space.configs[0] == p.candidate_index) {
      continue;  // nothing to decide or to change
    }
    spaces.push_back(std::move(space));
  }
  for (size_t k = 0; k < options.overrides.size(); ++k) {
    if (!override_used[k]) {
      state->unmatched_filters.push_back(
          absl::StrCat("mixed_precision.bit_width_overrides[", k, "] (",
                       NodeFilterText(options.overrides[k].filter), ")"));
      state->warnings.push_back(absl::StrCat(state->unmatched_filters.back(),
                                             ": matches no quantized node"));
    }
  }
  return spaces;
}

namespace {

// The parameters parameter selection chose for `slot` (the `index`-th slot
// with an initializer, SelectAllParams' order) when the candidate's slot
// `candidate` has the same config: SelectWeightParams is a function of the
// weight, the slot and the options, so they are what it would return again.
const WeightParams* PtqWeightParams(const NodePlan& p, const WeightSlot& slot,
                                    const WeightSlot& candidate, size_t index) {
  if (index >= p.weight_results.size()) return nullptr;
  const WeightParams& w = p.weight_results[index];
  if (w.input_index != slot.input_index || w.attr != slot.attr) return nullptr;
  return google::protobuf::util::MessageDifferencer::Equals(slot.config,
                                                            candidate.config)
             ? &w
             : nullptr;
}

// Shift-negative correction's Add under candidate `cfg`: its threshold
// and signedness stay, the grid follows the candidate's bits (MCT sets the
// same threshold on each of the Add's candidates).
ActivationParams FixedThresholdParams(const NodePlan& p,
                                      const v1::OpQuantizationConfig& cfg) {
  ActivationParams a = p.activation;
  a.n_bits = cfg.activation_n_bits();
  a.threshold = *p.fixed_threshold;
  a.scale = quantizers::CalculateDelta(a.threshold, a.n_bits, a.is_signed);
  a.zero_point = 0;
  return a;
}

}  // namespace

absl::Status SelectCandidateParams(bool search, JobState* state,
                                   ThreadPool* pool,
                                   const CancellationToken* cancel,
                                   std::vector<NodeSpace>* node_spaces) {
  std::vector<NodeSpace>& spaces = *node_spaces;
  Graph& g = state->model.graph;
  std::vector<std::pair<int, int>> jobs;
  for (size_t s = 0; s < spaces.size(); ++s) {
    NodeSpace& sp = spaces[s];
    const size_t m = sp.configs.size();
    sp.weight_results.resize(m);
    sp.slots.resize(m);
    sp.activation_results.resize(m);
    if (!search && m > 1) {
      sp.configs.resize(1);  // overrides only: the first fitting candidate
      sp.bits.resize(1);
    }
    for (size_t j = 0; j < sp.configs.size(); ++j) {
      jobs.push_back({static_cast<int>(s), static_cast<int>(j)});
    }
  }
  std::vector<absl::Status> job_status(jobs.size());
  auto select = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      job_status[t] = [&]() -> absl::Status {
        if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
        NodeSpace& sp = spaces[jobs[t].first];
        const int j = jobs[t].second;
        const NodePlan& p = state->plans[sp.node];
        const Node& node = g.nodes[sp.node];
        const auto& cfg = p.qco.quantization_configurations(sp.configs[j]);
        size_t selected = 0;  // index into p.weight_results
        for (const WeightSlot& slot : p.weights) {
          WeightSlot ns = slot;
          ns.config = SlotConfig(cfg, slot);
          const Tensor* w = g.FindInitializer(node.Input(slot.input_index));
          if (w == nullptr) continue;
          const WeightParams* ptq = PtqWeightParams(p, slot, ns, selected++);
          if (!SlotQuantized(ns.config)) continue;
          if (ptq != nullptr) {  // the same search, already done
            sp.slots[j].push_back(ns);
            sp.weight_results[j].push_back(*ptq);
            continue;
          }
          auto r = SelectWeightParams(node.Input(slot.input_index), *w, ns,
                                      state->options, nullptr, cancel);
          if (!r.ok()) {
            return absl::Status(
                r.status().code(),
                absl::StrCat(node.Label(), ": ", r.status().message()));
          }
          sp.slots[j].push_back(ns);
          sp.weight_results[j].push_back(*std::move(r));
        }
        if (p.quantize_activation && !p.preserving && !p.fused_inner &&
            p.fixed_threshold.has_value()) {
          sp.activation_results[j] = FixedThresholdParams(p, cfg);
        } else if (p.quantize_activation && !p.preserving && !p.fused_inner) {
          auto it = state->stats.find(node.outputs[0]);
          auto a = SelectActivationParams(
              node.outputs[0], cfg,
              it == state->stats.end() ? nullptr : &it->second, p.known_min,
              p.known_max, p.forced_signed, state->options);
          if (!a.ok()) {
            return absl::Status(
                a.status().code(),
                absl::StrCat(node.Label(), ": ", a.status().message()));
          }
          sp.activation_results[j] = *std::move(a);
        }
        return absl::OkStatus();
      }();
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(static_cast<int64_t>(jobs.size()), 1, select);
  } else {
    select(0, static_cast<int64_t>(jobs.size()));
  }
  for (const auto& st : job_status) RETURN_IF_ERROR(st);
  return absl::OkStatus();
}

}  // namespace quantd::mp_internal
