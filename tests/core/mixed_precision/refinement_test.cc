#include "core/mixed_precision/refinement.h"

#include <array>
#include <optional>
#include <random>

#include "core/mixed_precision/milp_solver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/mixed_precision/test_problems.h"

namespace quantd::mixed_precision {
namespace {

using ::testing::ElementsAre;

// Weights-only problem: node i has candidates {2, 4, 8} weights bits at 8-bit
// activations; figure = params_i * bits / 8.
BitAllocationProblem WeightsProblem(std::vector<double> params, double budget) {
  BitAllocationProblem problem;
  ResourceModel weights;
  weights.target = ResourceTarget::kWeights;
  weights.budget = budget;
  weights.base = {0};
  weights.delta.resize(1);
  for (size_t i = 0; i < params.size(); ++i) {
    ConfigurableNode node;
    node.name = "n" + std::to_string(i);
    node.candidates = {{2, 8}, {4, 8}, {8, 8}};
    node.sensitivity = {1, 1, 1};
    problem.nodes.push_back(node);
    weights.base[0] += params[i] * 2 / 8;
    weights.delta[0].push_back({0, params[i] * 2 / 8, params[i] * 6 / 8});
  }
  problem.resources.push_back(weights);
  return problem;
}

TEST(Refinement, UpgradesCheapestNodeFirstUntilBudget) {
  // params 80 and 40: min figure 20 + 10 = 30, budget 55 (25 spare).
  // Step 1: options n0->4b (+20 = 50), n0->8b (+60), n1->4b (+10 = 40),
  //   n1->8b (+30 = 60 > 55). Smallest weights: n1 at 4 bit (40).
  // Step 2: n0->4b (60 > 55), n1->8b (+20 = 60 > 55): stop.
  BitAllocationProblem problem = WeightsProblem({80, 40}, 55);
  EXPECT_THAT(RefineBitAllocation(problem, {0, 0}), ElementsAre(0, 1));
}

TEST(Refinement, WeightsOnlyKeepsActivationBits) {
  // Candidate 1 changes activation bits only: not a valid weights upgrade.
  BitAllocationProblem problem = WeightsProblem({80}, 1000);
  problem.nodes[0].candidates = {{2, 8}, {2, 16}, {8, 8}};
  EXPECT_THAT(RefineBitAllocation(problem, {0}), ElementsAre(2));
}

TEST(Refinement, SkippedWhenBopsRestricted) {
  BitAllocationProblem problem = WeightsProblem({80}, 1000);
  ResourceModel bops;
  bops.target = ResourceTarget::kBops;
  bops.budget = 1e9;
  bops.base = {1};
  bops.delta = {{{0, 1, 2}}};
  problem.resources.push_back(bops);
  EXPECT_THAT(RefineBitAllocation(problem, {0}), ElementsAre(0));
}

TEST(Refinement, NeverViolatesBudgetsNorLowersBits) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    BitAllocationProblem problem = testing::RandomProblem(rng);
    if (trial % 3 == 0) problem.nodes[1].fixed_candidate = 0;
    auto solved = SolveBitAllocation(problem);
    if (!solved.ok()) continue;
    const std::vector<int> refined =
        RefineBitAllocation(problem, solved->candidate);
    EXPECT_TRUE(SatisfiesBudgets(problem, refined)) << "trial " << trial;
    for (size_t i = 0; i < refined.size(); ++i) {
      const BitCandidate before =
          problem.nodes[i].candidates[solved->candidate[i]];
      const BitCandidate after = problem.nodes[i].candidates[refined[i]];
      EXPECT_GE(after.weights_bits, before.weights_bits) << "trial " << trial;
      EXPECT_GE(after.activation_bits, before.activation_bits)
          << "trial " << trial;
    }
    if (problem.nodes[1].fixed_candidate.has_value()) {
      EXPECT_EQ(refined[1], 0) << "trial " << trial;
    }
  }
}

// Direct transcription of MCT's greedy_solution_refinement_procedure with a
// full recomputation of every figure per move: the oracle for the
// incremental implementation.
std::vector<int> ReferenceRefinement(const BitAllocationProblem& problem,
                                     std::vector<int> solution) {
  auto restricted = [&](ResourceTarget t) {
    const ResourceModel* m = FindResource(problem, t);
    return m != nullptr && m->budget.has_value();
  };
  if (restricted(ResourceTarget::kBops)) return solution;
  const bool w = restricted(ResourceTarget::kWeights);
  const bool a = restricted(ResourceTarget::kActivation);
  auto figure = [&](ResourceTarget t, const std::vector<int>& config) {
    const ResourceModel* m = FindResource(problem, t);
    return m == nullptr ? 0.0 : ResourceValue(*m, config);
  };
  auto key = [&](const std::vector<int>& config) {
    return std::array<double, 3>{figure(ResourceTarget::kTotal, config),
                                 figure(ResourceTarget::kWeights, config),
                                 figure(ResourceTarget::kActivation, config)};
  };
  bool changed = true;
  while (changed) {
    changed = false;
    std::optional<std::array<double, 3>> best;
    int best_i = -1, best_j = -1;
    for (size_t i = 0; i < solution.size(); ++i) {
      const ConfigurableNode& node = problem.nodes[i];
      if (node.fixed_candidate.has_value()) continue;
      const BitCandidate cur = node.candidates[solution[i]];
      for (size_t j = 0; j < node.candidates.size(); ++j) {
        const BitCandidate c = node.candidates[j];
        bool valid;
        if (w && !a) {
          valid = c.activation_bits == cur.activation_bits &&
                  c.weights_bits > cur.weights_bits;
        } else if (a && !w) {
          valid = c.weights_bits == cur.weights_bits &&
                  c.activation_bits > cur.activation_bits;
        } else {
          valid = c.weights_bits >= cur.weights_bits &&
                  c.activation_bits >= cur.activation_bits &&
                  (c.weights_bits != cur.weights_bits ||
                   c.activation_bits != cur.activation_bits);
        }
        if (!valid) continue;
        std::vector<int> next = solution;
        next[i] = static_cast<int>(j);
        if (!SatisfiesBudgets(problem, next)) continue;
        if (!best.has_value() || key(next) < *best) {
          best = key(next);
          best_i = static_cast<int>(i);
          best_j = static_cast<int>(j);
        }
      }
    }
    if (best_i >= 0) {
      solution[best_i] = best_j;
      changed = true;
    }
  }
  return solution;
}

TEST(Refinement, MatchesReferenceProcedureOnRandomInstances) {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 300; ++trial) {
    BitAllocationProblem problem = testing::RandomProblem(rng);
    auto solved = SolveBitAllocation(problem);
    if (!solved.ok()) continue;
    EXPECT_EQ(RefineBitAllocation(problem, solved->candidate),
              ReferenceRefinement(problem, solved->candidate))
        << "trial " << trial;
  }
}

}  // namespace
}  // namespace quantd::mixed_precision
