#include "core/graph/pattern_matcher.h"

#include <vector>

#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;

// x -> Conv(c1) -> Relu(r1) -> Conv(c2) -> Add(a, with x2) -> Relu(r2) -> y
Model Chain() {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  b.Initializer("w", Tensor::FromVector<float>({1}, {1, 1, 1, 1}));
  b.AddNode("Conv", {"x", "w"}, {"t1"}, "c1");
  b.AddNode("Relu", {"t1"}, {"t2"}, "r1");
  b.AddNode("Conv", {"t2", "w"}, {"t3"}, "c2");
  b.AddNode("Add", {"t3", "x"}, {"t4"}, "a");
  b.AddNode("Relu", {"t4"}, {"y"}, "r2");
  b.Output("y", DType::kFloat);
  absl::StatusOr<Model> m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

TEST(MatchPatterns, LongestPatternWinsGreedilyInTopologicalOrder) {
  Model m = Chain();
  std::vector<FusionPattern> patterns = {
      {"conv_relu", {OpTypeIs("Conv"), OpTypeIs("Relu")}},
      {"conv_add_relu", {OpTypeIs("Conv"), OpTypeIs("Add"), OpTypeIs("Relu")}},
  };
  std::vector<PatternMatch> matches = MatchPatterns(m.graph, patterns);
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[0].pattern, 0);
  EXPECT_THAT(matches[0].nodes, ElementsAre(0, 1));  // c1, r1
  EXPECT_EQ(matches[1].pattern, 1);
  EXPECT_THAT(matches[1].nodes, ElementsAre(2, 3, 4));  // c2, a, r2
}

TEST(MatchPatterns, StopsAtTensorsWithTwoConsumers) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  b.Initializer("w", Tensor::FromVector<float>({1}, {1, 1, 1, 1}));
  b.AddNode("Conv", {"x", "w"}, {"t"}, "c");
  b.AddNode("Relu", {"t"}, {"y"}, "r");
  b.AddNode("Neg", {"t"}, {"z"}, "n");  // a second reader of the conv output
  b.Output("y", DType::kFloat);
  b.Output("z", DType::kFloat);
  absl::StatusOr<Model> m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(
      MatchPatterns(m->graph, {{"cr", {OpTypeIs("Conv"), OpTypeIs("Relu")}}})
          .empty());
}

TEST(MatchPatterns, EachNodeJoinsAtMostOneMatch) {
  Model m = Chain();
  // "Relu -> Conv" would reuse r1 after "Conv -> Relu" took it.
  std::vector<PatternMatch> matches =
      MatchPatterns(m.graph, {{"cr", {OpTypeIs("Conv"), OpTypeIs("Relu")}},
                              {"rc", {OpTypeIs("Relu"), OpTypeIs("Conv")}}});
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_THAT(matches[0].nodes, ElementsAre(0, 1));
}

}  // namespace
}  // namespace quantd
