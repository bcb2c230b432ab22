#include "core/pipeline/mixed_precision_stage.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/graph_index.h"
#include "core/mixed_precision/bit_allocation_problem.h"
#include "core/mixed_precision/milp_solver.h"
#include "core/mixed_precision/refinement.h"
#include "core/mixed_precision/sensitivity_metric.h"
#include "core/pipeline/mixed_precision_resources.h"
#include "core/pipeline/op_config_bits.h"
#include "core/pipeline/param_selection.h"
#include "core/pipeline/sensitivity.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

namespace mp = ::quantd::mixed_precision;

// MCT's MP_DEFAULT_NUM_SAMPLES.
constexpr int kDefaultNumImages = 32;
// Weight configs above 16 bits are MCT's FLOAT_BITWIDTH: float (attach.cc).
constexpr int kMaxWeightBits = 16;

bool AnySet(const v1::ResourceUtilization& r) {
  return r.has_weights_memory_bytes() || r.has_activation_memory_bytes() ||
         r.has_total_memory_bytes() || r.has_bops();
}

// The config a weight slot gets under candidate `c` (WeightConfigForInput's
// rule: the slot's attribute key, else a key containing "pos_attr" for
// positional inputs, else the default attribute config).
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

bool Matches(const v1::NodeFilter& f, const Node& node) {
  switch (f.filter_case()) {
    case v1::NodeFilter::kNodeType:
      return node.op_type == f.node_type();
    case v1::NodeFilter::kNodeName:
      return node.name == f.node_name();
    case v1::NodeFilter::kNameScope:
      return absl::StrContains(node.name, f.name_scope());
    default:
      return false;
  }
}

std::string FilterText(const v1::NodeFilter& f) {
  switch (f.filter_case()) {
    case v1::NodeFilter::kNodeType:
      return absl::StrCat("type ", f.node_type());
    case v1::NodeFilter::kNodeName:
      return absl::StrCat("name ", f.node_name());
    case v1::NodeFilter::kNameScope:
      return absl::StrCat("name scope ", f.name_scope());
    default:
      return "no filter";
  }
}

// One node's search space.
struct NodeSpace {
  int node = 0;
  bool weights_configurable = false;     // kernel bits vary
  bool activation_configurable = false;  // output bits vary
  std::vector<int> configs;  // indices into qco.quantization_configurations
  std::vector<mp::BitCandidate> bits;
  // Selected parameters per candidate.
  std::vector<std::vector<v1::WeightQuantization>> weight_results;
  std::vector<std::vector<WeightSlot>> slots;
  std::vector<std::optional<v1::ActivationQuantization>> activation_results;
  std::vector<double> sensitivity;
  int chosen = 0;  // index into configs
};

// Largest activation bits every consumer of node i accepts (through
// quantization-preserving consumers), as attach.cc's input-bits filter.
int ConsumerInputLimit(const Graph& g, const GraphIndex& index,
                       const std::vector<NodePlan>& plans, int i) {
  int limit = 1 << 30;
  if (g.nodes[i].outputs.empty()) return limit;
  std::vector<int> frontier = index.Consumers(g.nodes[i].outputs[0]);
  std::set<int> seen;
  while (!frontier.empty()) {
    const int c = frontier.back();
    frontier.pop_back();
    if (!seen.insert(c).second) continue;
    limit = std::min(limit, MaxSupportedInputBits(plans[c].config));
    if (plans[c].preserving && !g.nodes[c].outputs.empty()) {
      for (int n : index.Consumers(g.nodes[c].outputs[0])) {
        frontier.push_back(n);
      }
    }
  }
  return limit;
}

absl::StatusOr<std::optional<double>> ResolveTarget(bool has_abs, double abs,
                                                    bool has_frac, double frac,
                                                    double baseline,
                                                    const std::string& field) {
  std::optional<double> out;
  if (has_abs) {
    if (!std::isfinite(abs) || abs < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.target.", field, ": ", abs,
                       " is not a finite value >= 0"));
    }
    out = abs;
  }
  if (has_frac) {
    if (!std::isfinite(frac) || !(frac > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.target_fraction.", field, ": ", frac,
                       " is not a finite value > 0"));
    }
    const double f = frac * baseline;
    out = out ? std::min(*out, f) : f;
  }
  return out;
}

// Re-derives the parameters of quantization-preserving nodes from their
// (possibly re-selected) sources, in topological order.
void PropagatePreserved(JobState* state) {
  const Graph& g = state->model.graph;
  std::map<std::string, const v1::ActivationQuantization*> by_tensor;
  for (auto& [name, a] : state->input_activations) by_tensor[name] = &a;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = state->plans[i];
    if (p.preserving && p.quantize_activation) {
      auto it = by_tensor.find(p.preserved_from);
      if (it != by_tensor.end()) {
        p.activation = *it->second;
        p.activation.set_tensor(g.nodes[i].outputs[0]);
        p.activation.set_preserved_from(p.preserved_from);
      }
    }
    if (p.quantize_activation && !g.nodes[i].outputs.empty()) {
      by_tensor[g.nodes[i].outputs[0]] = &p.activation;
    }
  }
}

// The resource layout of the plan and, per layout entry, which node's
// candidate decides its bits.
struct PlanLayout {
  ResourceLayout layout;
  // Per layout weight: node and slot index in that node's plan.
  std::vector<std::pair<int, int>> weight_slot;
  // Per layout activation: deciding node (-1 = graph input, fixed).
  std::vector<int> activation_owner;
};

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
      act_bits[g.nodes[i].outputs[0]] = p.activation.n_bits() > 0
                                            ? p.activation.n_bits()
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

}  // namespace

bool MixedPrecisionRequested(const v1::MixedPrecisionConfig& config) {
  return AnySet(config.target()) || AnySet(config.target_fraction()) ||
         config.bit_width_overrides_size() > 0;
}

absl::Status ValidateMixedPrecisionConfig(
    const v1::MixedPrecisionConfig& config) {
  for (int k = 0; k < config.bit_width_overrides_size(); ++k) {
    const auto& o = config.bit_width_overrides(k);
    const std::string path =
        absl::StrCat("mixed_precision.bit_width_overrides[", k, "]");
    if (o.filter().filter_case() == v1::NodeFilter::FILTER_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".filter: no node_type, node_name or name_scope"));
    }
    if (o.target() == v1::BitWidthOverride::TARGET_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".target: WEIGHTS or ACTIVATION required"));
    }
    if (o.bits() <= 0 || o.bits() > 32) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".bits: ", o.bits(), " is not in [1, 32]"));
    }
    if (!o.attr().empty() && o.attr() != "kernel_attr") {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".attr: '", o.attr(),
                       "' (only kernel_attr has per-candidate bits)"));
    }
  }
  if (config.num_of_images() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.num_of_images: ", config.num_of_images(), " < 0"));
  }
  if (config.has_solver_time_limit_seconds() &&
      !(config.solver_time_limit_seconds() > 0)) {
    return absl::InvalidArgumentError(
        "mixed_precision.solver_time_limit_seconds: must be > 0");
  }
  // `!(x >= lo)` also catches NaN.
  if (config.has_metric_epsilon() && !(std::isfinite(config.metric_epsilon()) &&
                                       config.metric_epsilon() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.metric_epsilon: ", config.metric_epsilon(),
        " is not a finite number >= 0"));
  }
  if (config.has_exp_distance_weighting_sigma() &&
      !(std::isfinite(config.exp_distance_weighting_sigma()) &&
        config.exp_distance_weighting_sigma() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.exp_distance_weighting_sigma: ",
        config.exp_distance_weighting_sigma(), " is not a finite number > 0"));
  }
  if (config.kernel_weights_bits() < 0 ||
      config.kernel_weights_bits() > kMaxWeightBits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.kernel_weights_bits: ", config.kernel_weights_bits(),
        " is not in [1, ", kMaxWeightBits, "] (0 = unset)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MixedPrecisionOutcome> RunMixedPrecision(
    const v1::MixedPrecisionConfig& config, bool simd_padding,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const std::vector<SampleFeeds>& samples, JobState* state, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  RETURN_IF_ERROR(ValidateMixedPrecisionConfig(config));
  MixedPrecisionOutcome outcome;
  Graph& g = state->model.graph;
  const int n = static_cast<int>(g.nodes.size());

  // 1. Targets against the 8-bit figure of the attached plan.
  PlanLayout pl = BuildPlanLayout(*state, shapes);
  const ResourceBreakdown base8 =
      EvaluateResources(pl.layout, CurrentBits(pl, *state, simd_padding, 8));
  const auto& ta = config.target();
  const auto& tf = config.target_fraction();
  ASSIGN_OR_RETURN(
      outcome.targets.weights_memory_bytes,
      ResolveTarget(ta.has_weights_memory_bytes(), ta.weights_memory_bytes(),
                    tf.has_weights_memory_bytes(), tf.weights_memory_bytes(),
                    base8.weights, "weights_memory_bytes"));
  ASSIGN_OR_RETURN(outcome.targets.activation_memory_bytes,
                   ResolveTarget(ta.has_activation_memory_bytes(),
                                 ta.activation_memory_bytes(),
                                 tf.has_activation_memory_bytes(),
                                 tf.activation_memory_bytes(), base8.activation,
                                 "activation_memory_bytes"));
  ASSIGN_OR_RETURN(
      outcome.targets.total_memory_bytes,
      ResolveTarget(ta.has_total_memory_bytes(), ta.total_memory_bytes(),
                    tf.has_total_memory_bytes(), tf.total_memory_bytes(),
                    base8.total, "total_memory_bytes"));
  ASSIGN_OR_RETURN(outcome.targets.bops,
                   ResolveTarget(ta.has_bops(), ta.bops(), tf.has_bops(),
                                 tf.bops(), base8.bops, "bops"));
  const bool w_r = outcome.targets.weights_memory_bytes.has_value();
  const bool a_r = outcome.targets.activation_memory_bytes.has_value();
  const bool t_r = outcome.targets.total_memory_bytes.has_value();
  const bool b_r = outcome.targets.bops.has_value();
  const bool search = w_r || a_r || t_r || b_r;
  // MCT's candidate filter: with only weights (only activation) restricted,
  // the other dimension keeps its base bits.
  const bool weights_only = search && !a_r && !t_r && !b_r;
  const bool activation_only = search && a_r && !w_r && !t_r && !b_r;

  // 2. Candidate lists.
  GraphIndex index(g);
  std::vector<NodeSpace> spaces;
  std::vector<bool> override_used(config.bit_width_overrides_size(), false);
  for (int i = 0; i < n; ++i) {
    NodePlan& p = state->plans[i];
    const Node& node = g.nodes[i];
    int kernel_slot = -1;
    for (size_t s = 0; s < p.weights.size(); ++s) {
      if (p.weights[s].attr == "kernel_attr") kernel_slot = static_cast<int>(s);
    }
    const bool has_kernel = kernel_slot >= 0;
    const bool has_act =
        p.quantize_activation && !p.preserving && !p.fused_inner;
    if (!has_kernel && !has_act) continue;
    const int limit =
        has_act ? ConsumerInputLimit(g, index, state->plans, i) : (1 << 30);
    const auto& configs = p.qco.quantization_configurations();
    // Overrides that select this node.
    std::vector<int> overrides;
    for (int k = 0; k < config.bit_width_overrides_size(); ++k) {
      if (Matches(config.bit_width_overrides(k).filter(), node)) {
        overrides.push_back(k);
      }
    }
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
          (config.bit_width_overrides(k).target() ==
                   v1::BitWidthOverride::TARGET_WEIGHTS
               ? w_over
               : a_over) = true;
        }
        if (has_kernel && !w_over && wb != KernelBits(p.config)) continue;
        if (has_act && !a_over && ab != p.config.activation_n_bits()) continue;
      }
      bool ok = true;
      for (int k : overrides) {
        const auto& o = config.bit_width_overrides(k);
        if (o.target() == v1::BitWidthOverride::TARGET_WEIGHTS) {
          if (has_kernel && wb != o.bits()) ok = false;
        } else if (has_act && ab != o.bits()) {
          ok = false;
        }
      }
      if (!ok) continue;
      if (!seen.insert({wb, ab}).second) continue;
      space.configs.push_back(c);
      space.bits.push_back({wb, ab});
    }
    for (int k : overrides) {
      const auto& o = config.bit_width_overrides(k);
      const bool applies = o.target() == v1::BitWidthOverride::TARGET_WEIGHTS
                               ? has_kernel
                               : has_act;
      if (applies) override_used[k] = true;
    }
    if (space.configs.empty()) {
      if (overrides.empty()) continue;  // nothing fits: keep the base config
      std::set<int> w_have, a_have;
      for (const auto& cfg : configs) {
        if (KernelBits(cfg) > 0) w_have.insert(KernelBits(cfg));
        if (cfg.enable_activation_quantization()) {
          a_have.insert(cfg.activation_n_bits());
        }
      }
      std::vector<std::string> asked;
      for (int k : overrides) {
        const auto& o = config.bit_width_overrides(k);
        asked.push_back(absl::StrCat(
            "bit_width_overrides[", k, "] ",
            o.target() == v1::BitWidthOverride::TARGET_WEIGHTS ? "weights"
                                                               : "activation",
            "=", o.bits()));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "mixed_precision: ", node.Label(), ": no candidate of op set '",
          p.op_set, "' fits ", absl::StrJoin(asked, ", "),
          " (weights bits: ", absl::StrJoin(w_have, ", "),
          "; activation bits: ", absl::StrJoin(a_have, ", "), ")"));
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
  for (int k = 0; k < config.bit_width_overrides_size(); ++k) {
    if (!override_used[k]) {
      state->warnings.push_back(
          absl::StrCat("mixed_precision.bit_width_overrides[", k, "] (",
                       FilterText(config.bit_width_overrides(k).filter()),
                       "): matches no quantized node"));
    }
  }

  // 3. Parameters per candidate (the costly searches, in parallel).
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
        for (const WeightSlot& slot : p.weights) {
          WeightSlot ns = slot;
          ns.config = SlotConfig(cfg, slot);
          if (!SlotQuantized(ns.config)) continue;
          const Tensor* w = g.FindInitializer(node.Input(slot.input_index));
          if (w == nullptr) continue;
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
        if (p.quantize_activation && !p.preserving && !p.fused_inner) {
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

  // 4. Search.
  std::vector<int> searched;  // indices into spaces with > 1 candidate
  for (size_t s = 0; s < spaces.size(); ++s) {
    if (spaces[s].configs.size() > 1) searched.push_back(static_cast<int>(s));
  }
  outcome.configurable_nodes = static_cast<int>(searched.size());
  if (search && !searched.empty()) {
    // Sensitivity: only the searched node quantized, at each candidate.
    std::vector<SensitivityNode> sens_nodes;
    for (int s : searched) {
      const NodeSpace& sp = spaces[s];
      SensitivityNode sn;
      sn.node = sp.node;
      for (size_t j = 0; j < sp.configs.size(); ++j) {
        SensitivityCandidate c;
        if (sp.weights_configurable) {
          for (const auto& w : sp.weight_results[j]) {
            if (w.attr() == "kernel_attr") c.weights.push_back(w);
          }
        }
        if (sp.activation_configurable) {
          c.activation = sp.activation_results[j];
        }
        sn.candidates.push_back(std::move(c));
      }
      sens_nodes.push_back(std::move(sn));
    }
    const int images =
        config.num_of_images() > 0 ? config.num_of_images() : kDefaultNumImages;
    std::vector<SampleFeeds> used(
        samples.begin(),
        samples.begin() + std::min<size_t>(samples.size(), images));
    SensitivityOptions so;
    switch (config.distance_weighting_method()) {
      case v1::DISTANCE_WEIGHTING_LAST_LAYER:
        so.weighting.method = mp::DistanceWeighting::kLastLayer;
        break;
      case v1::DISTANCE_WEIGHTING_EXP:
        so.weighting.method = mp::DistanceWeighting::kExp;
        break;
      case v1::DISTANCE_WEIGHTING_HESSIAN:
        return absl::UnimplementedError(
            "mixed_precision.distance_weighting_method: HESSIAN is not "
            "implemented by this quantd version");
      default:
        so.weighting.method = mp::DistanceWeighting::kAvg;
    }
    if (config.use_hessian_based_scores()) {
      return absl::UnimplementedError(
          "mixed_precision.use_hessian_based_scores is not implemented by "
          "this quantd version");
    }
    if (config.has_exp_distance_weighting_sigma()) {
      so.weighting.exp_sigma = config.exp_distance_weighting_sigma();
    }
    const double factor = config.has_num_interest_points_factor()
                              ? config.num_interest_points_factor()
                              : 1.0;
    if (!(factor > 0) || factor > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.num_interest_points_factor: ", factor,
                       " is not in (0, 1]"));
    }
    ASSIGN_OR_RETURN(
        auto sens,
        ComputeSensitivities(
            state->model, sens_nodes,
            MpInterestPoints(state->model, state->plans, factor),
            MpOutputPoints(state->model), used, so, pool, cancel, progress));
    const double eps =
        config.has_metric_epsilon() ? config.metric_epsilon() : 1e-6;
    for (size_t k = 0; k < searched.size(); ++k) {
      NodeSpace& sp = spaces[searched[k]];
      int max_bit = 0;
      for (size_t j = 1; j < sp.bits.size(); ++j) {
        const auto& b = sp.bits[j];
        const auto& m = sp.bits[max_bit];
        if (b.weights_bits + b.activation_bits >
            m.weights_bits + m.activation_bits) {
          max_bit = static_cast<int>(j);
        }
      }
      sp.sensitivity = mp::ApplyMetricEpsilon(sens[k], max_bit, eps);
    }

    // The problem, linearized around the minimum-bit configuration.
    mp::BitAllocationProblem problem;
    ResourceBits min_bits = CurrentBits(pl, *state, simd_padding, 0);
    for (const NodeSpace& sp : spaces) {  // pinned (single) candidates
      if (sp.configs.size() == 1) {
        SetCandidateBits(pl, *state, sp, 0, simd_padding, &min_bits);
      }
    }
    for (int s : searched) {
      const NodeSpace& sp = spaces[s];
      mp::ConfigurableNode cn;
      cn.name = g.nodes[sp.node].name;
      // A float dimension counts as 32 bits (MCT's FLOAT_BITWIDTH); it is
      // the same for every candidate of the node.
      for (const auto& b : sp.bits) {
        cn.candidates.push_back(
            {b.weights_bits > 0 ? b.weights_bits : 32,
             b.activation_bits > 0 ? b.activation_bits : 32});
      }
      cn.sensitivity = sp.sensitivity;
      int mn = 0;
      for (size_t j = 1; j < sp.bits.size(); ++j) {
        const auto& b = sp.bits[j];
        const auto& m = sp.bits[mn];
        if (b.weights_bits < m.weights_bits ||
            (b.weights_bits == m.weights_bits &&
             b.activation_bits < m.activation_bits)) {
          mn = static_cast<int>(j);
        }
      }
      cn.min_candidate = mn;
      SetCandidateBits(pl, *state, sp, mn, simd_padding, &min_bits);
      problem.nodes.push_back(std::move(cn));
    }
    const ResourceBreakdown base = EvaluateResources(pl.layout, min_bits);
    std::vector<mp::ResourceTarget> kinds = {mp::ResourceTarget::kWeights,
                                             mp::ResourceTarget::kActivation,
                                             mp::ResourceTarget::kTotal};
    if (b_r) kinds.push_back(mp::ResourceTarget::kBops);
    auto budget_of = [&](mp::ResourceTarget t) -> std::optional<double> {
      switch (t) {
        case mp::ResourceTarget::kWeights:
          return outcome.targets.weights_memory_bytes;
        case mp::ResourceTarget::kActivation:
          return outcome.targets.activation_memory_bytes;
        case mp::ResourceTarget::kTotal:
          return outcome.targets.total_memory_bytes;
        case mp::ResourceTarget::kBops:
          return outcome.targets.bops;
      }
      return std::nullopt;
    };
    for (mp::ResourceTarget t : kinds) {
      mp::ResourceModel model;
      model.target = t;
      model.budget = budget_of(t);
      model.base = Elements(base, t);
      model.delta.assign(model.base.size(),
                         std::vector<std::vector<double>>(searched.size()));
      problem.resources.push_back(std::move(model));
    }
    for (size_t k = 0; k < searched.size(); ++k) {
      const NodeSpace& sp = spaces[searched[k]];
      for (size_t j = 0; j < sp.configs.size(); ++j) {
        ResourceBits b = min_bits;
        SetCandidateBits(pl, *state, sp, static_cast<int>(j), simd_padding, &b);
        const ResourceBreakdown r = EvaluateResources(pl.layout, b);
        for (auto& model : problem.resources) {
          const std::vector<double> e = Elements(r, model.target);
          for (size_t el = 0; el < e.size(); ++el) {
            model.delta[el][k].push_back(
                j == static_cast<size_t>(problem.nodes[k].min_candidate)
                    ? 0.0
                    : e[el] - model.base[el]);
          }
        }
      }
    }
    mp::MilpOptions milp;
    if (config.has_solver_time_limit_seconds()) {
      milp.time_limit_seconds = config.solver_time_limit_seconds();
    }
    if (progress != nullptr) {
      progress->Report({"mixed_precision", 1.0, "solving the allocation"});
    }
    // BOPs of a node whose weights and input activation both vary is
    // bilinear; the linearized constraint can under-count it. The exact
    // figure is checked and the budget tightened by the excess (a few
    // rounds) until it holds.
    std::vector<int> solution;
    for (int round = 0;; ++round) {
      auto solved = mp::SolveBitAllocation(problem, milp);
      if (!solved.ok()) {
        return absl::Status(
            solved.status().code(),
            absl::StrCat("mixed_precision: ", solved.status().message()));
      }
      outcome.proven_optimal = solved->proven_optimal;
      solution = solved->candidate;
      const bool refine =
          !config.has_refine_mp_solution() || config.refine_mp_solution();
      if (refine) solution = mp::RefineBitAllocation(problem, solution);
      if (!b_r) break;
      ResourceBits b = min_bits;
      for (size_t k = 0; k < searched.size(); ++k) {
        SetCandidateBits(pl, *state, spaces[searched[k]], solution[k],
                         simd_padding, &b);
      }
      const double exact = EvaluateResources(pl.layout, b).bops;
      if (mp::WithinBudget(exact, *outcome.targets.bops)) break;
      if (round == 4) {
        return absl::FailedPreconditionError(absl::StrCat(
            "mixed_precision: the BOPs budget ", *outcome.targets.bops,
            " could not be met exactly (best allocation found: ", exact,
            " BOPs; weights and activations of the same nodes interact)"));
      }
      for (auto& model : problem.resources) {
        if (model.target == mp::ResourceTarget::kBops) {
          *model.budget -= exact - *outcome.targets.bops;
        }
      }
    }
    for (size_t k = 0; k < searched.size(); ++k) {
      spaces[searched[k]].chosen = solution[k];
    }
  }

  // 5. Apply the chosen candidates.
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
      outcome.sensitivity[g.nodes[sp.node].name] = std::move(per_config);
    }
  }
  PropagatePreserved(state);
  return outcome;
}

void AddMixedPrecisionResults(const MixedPrecisionOutcome& outcome,
                              v1::QuantizedGraph* graph) {
  for (v1::QuantizedNode& n : *graph->mutable_nodes()) {
    auto it = outcome.sensitivity.find(n.name());
    if (it == outcome.sensitivity.end()) continue;
    n.clear_candidate_sensitivity();
    for (double s : it->second) n.add_candidate_sensitivity(s);
  }
}

}  // namespace quantd
