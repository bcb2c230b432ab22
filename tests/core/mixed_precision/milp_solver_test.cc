#include "core/mixed_precision/milp_solver.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/mixed_precision/test_problems.h"

namespace quantd::mixed_precision {
namespace {

using testing::BruteForceOptimum;
using ::testing::HasSubstr;
using testing::RandomProblem;

// Two nodes, candidates {2, 4, 8} weights bits; weights figure is
// params * bits / 8 with 100 and 200 params.
BitAllocationProblem TwoNodeWeightsProblem(double budget) {
  BitAllocationProblem problem;
  for (int i = 0; i < 2; ++i) {
    ConfigurableNode node;
    node.name = i == 0 ? "conv_a" : "conv_b";
    node.candidates = {{2, 8}, {4, 8}, {8, 8}};
    node.sensitivity =
        i == 0 ? std::vector<double>{10, 3, 0} : std::vector<double>{8, 2, 0};
    problem.nodes.push_back(node);
  }
  ResourceModel weights;
  weights.target = ResourceTarget::kWeights;
  weights.budget = budget;
  // min config: 100*2/8 + 200*2/8 = 25 + 50 = 75 bytes.
  weights.base = {75};
  // conv_a: 4 bit +25, 8 bit +75; conv_b: 4 bit +50, 8 bit +150.
  weights.delta = {{{0, 25, 75}, {0, 50, 150}}};
  problem.resources.push_back(weights);
  return problem;
}

TEST(MilpSolver, HandDerivedTwoNodeOptimum) {
  // Budget 150: options within 75 of extra bytes: (8,2) m=0+8=8 extra 75;
  // (4,4) m=3+2=5 extra 75; (2,4) m=12; so (4 bit, 4 bit) with objective 5.
  auto result = SolveBitAllocation(TwoNodeWeightsProblem(150));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->candidate, ::testing::ElementsAre(1, 1));
  EXPECT_DOUBLE_EQ(result->objective, 5.0);
  EXPECT_TRUE(result->proven_optimal);
}

TEST(MilpSolver, MatchesBruteForceOnRandomInstances) {
  std::mt19937 rng(20261122);
  // 1000 instances: CBC's CbcMain1 path failed on about 1 in 100 of these.
  for (int trial = 0; trial < 1000; ++trial) {
    BitAllocationProblem problem = RandomProblem(rng);
    // Overrides on some instances.
    if (trial % 4 == 0) problem.nodes[0].fixed_candidate = 1;
    const std::optional<double> expected = BruteForceOptimum(problem);
    auto result = SolveBitAllocation(problem);
    if (!expected.has_value()) {
      EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition)
          << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(result.ok()) << "trial " << trial << ": " << result.status();
    EXPECT_NEAR(result->objective, *expected, 1e-9) << "trial " << trial;
    EXPECT_TRUE(SatisfiesBudgets(problem, result->candidate))
        << "trial " << trial;
    EXPECT_TRUE(result->proven_optimal) << "trial " << trial;
    if (problem.nodes[0].fixed_candidate.has_value()) {
      EXPECT_EQ(result->candidate[0], 1) << "trial " << trial;
    }
  }
}

TEST(MilpSolver, InterruptedSolveReturnsCancelled) {
  MilpOptions options;
  int polls = 0;
  options.interrupted = [&polls] { return ++polls > 1; };
  auto result = SolveBitAllocation(TwoNodeWeightsProblem(150), options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
}

// A job's token that never fires leaves CBC's answer as it was.
TEST(MilpSolver, UnfiredInterruptChangesNoAllocation) {
  std::mt19937 rng(20261126);
  MilpOptions polled;
  polled.interrupted = [] { return false; };
  for (int trial = 0; trial < 200; ++trial) {
    const BitAllocationProblem problem = RandomProblem(rng);
    auto plain = SolveBitAllocation(problem);
    auto with_handler = SolveBitAllocation(problem, polled);
    ASSERT_EQ(plain.ok(), with_handler.ok()) << "trial " << trial;
    if (!plain.ok()) continue;
    EXPECT_EQ(plain->candidate, with_handler->candidate) << "trial " << trial;
    EXPECT_EQ(plain->objective, with_handler->objective) << "trial " << trial;
  }
}

TEST(MilpSolver, InfeasibleBudgetNamesSmallestAchievableFigures) {
  BitAllocationProblem problem = TwoNodeWeightsProblem(60);
  ResourceModel activation;
  activation.target = ResourceTarget::kActivation;
  activation.budget = 10;
  // Two cuts with min figures 30 and 40: smallest achievable is 40.
  activation.base = {30, 40};
  activation.delta = {{{0, 1, 2}, {0, 0, 0}}, {{0, 0, 0}, {0, 5, 9}}};
  problem.resources.push_back(activation);
  ResourceModel bops;
  bops.target = ResourceTarget::kBops;
  bops.budget = 1e6;  // Satisfied: not named.
  bops.base = {1000};
  bops.delta = {{{0, 1, 2}, {0, 1, 2}}};
  problem.resources.push_back(bops);
  auto result = SolveBitAllocation(problem);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              HasSubstr("weights: smallest achievable 75 > requested 60"));
  EXPECT_THAT(result.status().message(),
              HasSubstr("activation: smallest achievable 40 > requested 10"));
  EXPECT_THAT(result.status().message(), ::testing::Not(HasSubstr("bops")));
}

TEST(MilpSolver, OverrideRaisesSmallestAchievableFigure) {
  // conv_b fixed at 8 bit: min figure 75 + 150 = 225 > 200.
  BitAllocationProblem problem = TwoNodeWeightsProblem(200);
  problem.nodes[1].fixed_candidate = 2;
  auto result = SolveBitAllocation(problem);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              HasSubstr("weights: smallest achievable 225 > requested 200"));
}

TEST(MilpSolver, OverrideIsRespectedEvenWhenCostly) {
  // Unconstrained optimum would be (8, 8); conv_a forced to 2 bit.
  BitAllocationProblem problem = TwoNodeWeightsProblem(1000);
  problem.nodes[0].fixed_candidate = 0;
  auto result = SolveBitAllocation(problem);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->candidate, ::testing::ElementsAre(0, 2));
  EXPECT_DOUBLE_EQ(result->objective, 10.0);
}

TEST(MilpSolver, InfeasibleMessagePrintsLargeByteCountsWhole) {
  // Base 1234567 bytes against a budget one byte smaller.
  BitAllocationProblem problem = TwoNodeWeightsProblem(1234566);
  problem.resources[0].base = {1234567};
  auto result = SolveBitAllocation(problem);
  EXPECT_THAT(
      result.status().message(),
      HasSubstr("weights: smallest achievable 1234567 > requested 1234566"));
}

TEST(MilpSolver, RejectsMalformedProblem) {
  BitAllocationProblem problem = TwoNodeWeightsProblem(150);
  problem.resources[0].delta[0][1].pop_back();
  auto result = SolveBitAllocation(problem);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("resources[0] (weights).delta[0][1] ('conv_b')"));
}

TEST(MilpSolver, SameAnswerOnRepeatedSolves) {
  std::mt19937 rng(7);
  BitAllocationProblem problem = RandomProblem(rng);
  auto first = SolveBitAllocation(problem);
  auto second = SolveBitAllocation(problem);
  ASSERT_EQ(first.ok(), second.ok());
  if (first.ok()) {
    EXPECT_EQ(first->candidate, second->candidate);
  }
}

}  // namespace
}  // namespace quantd::mixed_precision
