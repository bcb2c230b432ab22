#include "core/mixed_precision/bit_allocation_problem.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::mixed_precision {
namespace {

using ::testing::HasSubstr;

BitAllocationProblem OneNode() {
  BitAllocationProblem problem;
  ConfigurableNode node;
  node.name = "fc";
  node.candidates = {{4, 8}, {8, 8}};
  node.sensitivity = {1.0, 0.0};
  problem.nodes.push_back(node);
  ResourceModel weights;
  weights.target = ResourceTarget::kWeights;
  weights.base = {10};
  weights.delta = {{{0, 10}}};
  problem.resources.push_back(weights);
  return problem;
}

TEST(ProblemValidation, AcceptsWellFormedProblem) {
  EXPECT_TRUE(ValidateProblem(OneNode()).ok());
}

TEST(ProblemValidation, RejectsNegativeSensitivity) {
  BitAllocationProblem problem = OneNode();
  problem.nodes[0].sensitivity[1] = -1;
  EXPECT_THAT(ValidateProblem(problem).message(),
              HasSubstr("nodes[0] ('fc').sensitivity[1] = -1"));
}

TEST(ProblemValidation, RejectsNonZeroDeltaAtMinimumCandidate) {
  BitAllocationProblem problem = OneNode();
  problem.resources[0].delta[0][0][0] = 3;
  EXPECT_THAT(ValidateProblem(problem).message(),
              HasSubstr("delta at the minimum candidate 0 is 3"));
}

TEST(ProblemValidation, RejectsOverrideOutOfRange) {
  BitAllocationProblem problem = OneNode();
  problem.nodes[0].fixed_candidate = 5;
  EXPECT_THAT(ValidateProblem(problem).message(),
              HasSubstr("nodes[0] ('fc').fixed_candidate = 5 out of range"));
}

TEST(ProblemValidation, RejectsDuplicateTarget) {
  BitAllocationProblem problem = OneNode();
  problem.resources.push_back(problem.resources[0]);
  EXPECT_THAT(ValidateProblem(problem).message(),
              HasSubstr("target 'weights' given twice"));
}

TEST(ProblemValidation, ResourceValueIsMaxOverCuts) {
  ResourceModel model;
  model.base = {10, 20};
  model.delta = {{{0, 15}}, {{0, 1}}};
  // Cut 0: 10 + 15 = 25, cut 1: 20 + 1 = 21 -> 25; at min: max(10, 20) = 20.
  EXPECT_DOUBLE_EQ(ResourceValue(model, {1}), 25);
  EXPECT_DOUBLE_EQ(ResourceValue(model, {0}), 20);
}

}  // namespace
}  // namespace quantd::mixed_precision
