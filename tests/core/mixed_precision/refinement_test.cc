#include "core/mixed_precision/refinement.h"

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

}  // namespace
}  // namespace quantd::mixed_precision
