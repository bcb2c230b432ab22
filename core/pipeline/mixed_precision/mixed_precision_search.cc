// The mixed-precision search (MCT's search facade and manager): the
// sensitivity of every candidate of the searched nodes, the bit-allocation
// problem linearized around their minimum-bit candidates, and the solver
// with MCT's refinement and the exact BOPs check.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/mixed_precision/milp_solver.h"
#include "core/mixed_precision/refinement.h"
#include "core/mixed_precision/sensitivity_metric.h"
#include "core/pipeline/mixed_precision/internal/mixed_precision_space.h"
#include "core/pipeline/mixed_precision/sensitivity.h"
#include "core/runtime/stage_names.h"
#include "core/tpc/attribute_names.h"
#include "core/util/status_macros.h"

namespace quantd::mp_internal {
namespace {

namespace mp = ::quantd::mixed_precision;

// Sensitivity: only the searched node quantized, at each candidate; sets
// the `sensitivity` of every searched space.
absl::Status ComputeSpaceSensitivities(const MixedPrecisionOptions& options,
                                       const std::vector<int>& searched,
                                       const std::vector<SampleFeeds>& samples,
                                       JobState* state, ThreadPool* pool,
                                       const CancellationToken* cancel,
                                       ProgressSink* progress,
                                       std::vector<NodeSpace>* node_spaces) {
  std::vector<NodeSpace>& spaces = *node_spaces;
  std::vector<SensitivityNode> sens_nodes;
  for (int s : searched) {
    const NodeSpace& sp = spaces[s];
    SensitivityNode sn;
    sn.node = sp.node;
    for (size_t j = 0; j < sp.configs.size(); ++j) {
      SensitivityCandidate c;
      if (sp.weights_configurable) {
        for (const auto& w : sp.weight_results[j]) {
          if (w.attr == tpc::kKernelAttr) c.weights.push_back(w);
        }
      }
      if (sp.activation_configurable) {
        c.activation = sp.activation_results[j];
      }
      sn.candidates.push_back(std::move(c));
    }
    sens_nodes.push_back(std::move(sn));
  }
  std::vector<SampleFeeds> used(
      samples.begin(),
      samples.begin() + MixedPrecisionSensitivitySamples(
                            options, static_cast<int>(samples.size())));
  SensitivityOptions so;
  so.depth = options.sensitivity_depth;
  so.weighting.method = options.weighting;
  so.weighting.exp_sigma = options.exp_distance_weighting_sigma;
  const double factor = options.num_interest_points_factor;
  ASSIGN_OR_RETURN(
      auto sens,
      ComputeSensitivities(state->model, sens_nodes,
                           MpInterestPoints(state->model, state->plans, factor),
                           MpOutputPoints(state->model), used, so, pool, cancel,
                           progress));
  const double eps = options.metric_epsilon;
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
  return absl::OkStatus();
}

// The sensitivities of every searched space from `reuse` (by node name and
// TPC candidate); false, with no space changed, when one is missing.
bool ReuseSensitivities(const MixedPrecisionSensitivity* reuse,
                        const std::vector<int>& searched, const Graph& g,
                        std::vector<NodeSpace>* spaces) {
  if (reuse == nullptr) return false;
  std::vector<std::vector<double>> found;
  for (int s : searched) {
    const NodeSpace& sp = (*spaces)[s];
    auto it = reuse->find(g.nodes[sp.node].name);
    if (it == reuse->end()) return false;
    std::vector<double>& v = found.emplace_back();
    for (int config : sp.configs) {
      if (config < 0 || config >= static_cast<int>(it->second.size()) ||
          it->second[config] < 0) {
        return false;
      }
      v.push_back(it->second[config]);
    }
  }
  for (size_t k = 0; k < searched.size(); ++k) {
    (*spaces)[searched[k]].sensitivity = std::move(found[k]);
  }
  return true;
}

// The problem, linearized around the minimum-bit configuration; `min_bits`
// receives the bits of that configuration.
mp::BitAllocationProblem BuildAllocationProblem(
    const PlanLayout& pl, const JobState& state,
    const std::vector<NodeSpace>& spaces, const std::vector<int>& searched,
    const mixed_precision::ResourceFigures& targets, bool simd_padding,
    ResourceBits* min_bits_out) {
  const Graph& g = state.model.graph;
  const bool b_r = targets.bops.has_value();
  mp::BitAllocationProblem problem;
  ResourceBits min_bits = CurrentBits(pl, state, simd_padding, 0);
  for (const NodeSpace& sp : spaces) {  // pinned (single) candidates
    if (sp.configs.size() == 1) {
      SetCandidateBits(pl, state, sp, 0, simd_padding, &min_bits);
    }
  }
  for (int s : searched) {
    const NodeSpace& sp = spaces[s];
    mp::ConfigurableNode cn;
    cn.name = g.nodes[sp.node].name;
    // A float dimension counts as 32 bits (MCT's FLOAT_BITWIDTH); it is
    // the same for every candidate of the node.
    for (const auto& b : sp.bits) {
      cn.candidates.push_back({b.weights_bits > 0 ? b.weights_bits : 32,
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
    SetCandidateBits(pl, state, sp, mn, simd_padding, &min_bits);
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
        return targets.weights_memory_bytes;
      case mp::ResourceTarget::kActivation:
        return targets.activation_memory_bytes;
      case mp::ResourceTarget::kTotal:
        return targets.total_memory_bytes;
      case mp::ResourceTarget::kBops:
        return targets.bops;
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
      SetCandidateBits(pl, state, sp, static_cast<int>(j), simd_padding, &b);
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
  *min_bits_out = std::move(min_bits);
  return problem;
}

// Solves `problem` (refined as MCT does); with a BOPs target, tightens its
// budget until the exact figure holds. The candidate per searched node.
absl::StatusOr<std::vector<int>> SolveAllocation(
    const MixedPrecisionOptions& options, const PlanLayout& pl,
    const JobState& state, const std::vector<NodeSpace>& spaces,
    const std::vector<int>& searched, const ResourceBits& min_bits,
    bool simd_padding, const CancellationToken* cancel, ProgressSink* progress,
    mp::BitAllocationProblem* problem_io, MixedPrecisionOutcome* outcome_io) {
  mp::BitAllocationProblem& problem = *problem_io;
  MixedPrecisionOutcome& outcome = *outcome_io;
  const bool b_r = outcome.targets.bops.has_value();
  mp::MilpOptions milp;
  milp.time_limit_seconds = options.solver_time_limit_seconds;
  if (cancel != nullptr) {
    milp.interrupted = [cancel] { return cancel->IsCancelled(); };
  }
  if (progress != nullptr) {
    progress->Report({stage::kMixedPrecision, 1.0, "solving the allocation"});
  }
  // BOPs of a node whose weights and input activation both vary is
  // bilinear; the linearized constraint can under-count it. The exact
  // figure is checked and the budget tightened by the excess (a few
  // rounds) until it holds.
  std::vector<int> solution;
  for (int round = 0;; ++round) {
    auto solved = mp::SolveBitAllocation(problem, milp);
    // The token's own status (CANCELLED or DEADLINE_EXCEEDED).
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    if (!solved.ok()) {
      return absl::Status(
          solved.status().code(),
          absl::StrCat("mixed_precision: ", solved.status().message()));
    }
    outcome.proven_optimal = solved->proven_optimal;
    solution = solved->candidate;
    if (options.refine_solution)
      solution = mp::RefineBitAllocation(problem, solution);
    if (!b_r) break;
    ResourceBits b = min_bits;
    for (size_t k = 0; k < searched.size(); ++k) {
      SetCandidateBits(pl, state, spaces[searched[k]], solution[k],
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
  return solution;
}

}  // namespace

absl::Status SearchBitAllocation(
    const MixedPrecisionOptions& options, bool search, const PlanLayout& pl,
    bool simd_padding, const std::vector<SampleFeeds>& samples, JobState* state,
    ThreadPool* pool, const CancellationToken* cancel, ProgressSink* progress,
    const MixedPrecisionSensitivity* reuse, std::vector<NodeSpace>* node_spaces,
    MixedPrecisionOutcome* outcome) {
  std::vector<NodeSpace>& spaces = *node_spaces;
  std::vector<int> searched;  // indices into spaces with > 1 candidate
  for (size_t s = 0; s < spaces.size(); ++s) {
    if (spaces[s].configs.size() > 1) searched.push_back(static_cast<int>(s));
  }
  outcome->configurable_nodes = static_cast<int>(searched.size());
  if (search && !searched.empty()) {
    // Sensitivity: only the searched node quantized, at each candidate.
    if (!ReuseSensitivities(reuse, searched, state->model.graph, &spaces)) {
      RETURN_IF_ERROR(ComputeSpaceSensitivities(
          options, searched, samples, state, pool, cancel, progress, &spaces));
    }
    ResourceBits min_bits;
    mp::BitAllocationProblem problem =
        BuildAllocationProblem(pl, *state, spaces, searched, outcome->targets,
                               simd_padding, &min_bits);
    ASSIGN_OR_RETURN(
        std::vector<int> solution,
        SolveAllocation(options, pl, *state, spaces, searched, min_bits,
                        simd_padding, cancel, progress, &problem, outcome));
    for (size_t k = 0; k < searched.size(); ++k) {
      spaces[searched[k]].chosen = solution[k];
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd::mp_internal
