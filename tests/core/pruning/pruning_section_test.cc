// Section search, channel groups and the greedy mask on hand-built graphs;
// every expected number is derived by hand in the comments.
#include "core/pruning/pruning_section.h"

#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "core/pruning/channel_groups.h"
#include "core/pruning/weights_memory.h"
#include "gtest/gtest.h"
#include "tests/core/pruning/pruning_test_util.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd::pruning {
namespace {

Model Import(const std::string& bytes) {
  absl::StatusOr<Model> m = ImportOnnx(bytes);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

TEST(PruningSectionTest, ChainModelHasThreeSections) {
  Model m = Import(pruning_test::ChainModel());
  SectionSearch found = FindPruningSections(m.graph);
  ASSERT_EQ(found.sections.size(), 3u);
  const auto name = [&](int n) { return m.graph.nodes[n].name; };
  EXPECT_EQ(name(found.sections[0].entry), "conv1");
  EXPECT_EQ(name(found.sections[0].exit), "conv2");
  EXPECT_EQ(found.sections[0].channels, 8);
  // w1 (axis 0), b1, four BN parameters, w2 (axis 1).
  ASSERT_EQ(found.sections[0].tensors.size(), 7u);
  EXPECT_EQ(found.sections[0].tensors.back().initializer, "w2");
  EXPECT_EQ(found.sections[0].tensors.back().axis, 1);
  EXPECT_EQ(name(found.sections[1].entry), "conv2");
  EXPECT_EQ(name(found.sections[1].exit), "conv3");
  // w2 (axis 0), b2, the [8, 1, 1] Mul constant (axis 0), w3 (axis 1).
  ASSERT_EQ(found.sections[1].tensors.size(), 4u);
  EXPECT_EQ(found.sections[1].tensors[2].initializer, "scale");
  EXPECT_EQ(found.sections[1].tensors[2].axis, 0);
  EXPECT_EQ(name(found.sections[2].entry), "gemm1");
  EXPECT_EQ(name(found.sections[2].exit), "gemm2");
  EXPECT_EQ(found.sections[2].channels, 16);
  // gemm1's B [4, 16] loses columns; gemm2's B [5, 16] (transB) too.
  EXPECT_EQ(found.sections[2].tensors[0].axis, 1);
  EXPECT_EQ(found.sections[2].tensors.back().axis, 1);
}

TEST(PruningSectionTest, ResidualAddEndsTheSection) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w1", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  b.FloatInitializer("w2", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  b.AddNode("Conv", {"x", "w1"}, {"c1"}, "conv1");
  b.AddNode("Add", {"c1", "x"}, {"a"}, "residual");
  b.AddNode("Conv", {"a", "w2"}, {"y"}, "conv2");
  b.Output("y", DType::kFloat);
  Model m = Import(b.Serialize());
  SectionSearch found = FindPruningSections(m.graph);
  EXPECT_TRUE(found.sections.empty());
  ASSERT_FALSE(found.rejected.empty());
  EXPECT_NE(found.rejected[0].find("'x' is not a constant"), std::string::npos)
      << found.rejected[0];
}

TEST(PruningSectionTest, BranchingOutputEndsTheSection) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w1", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  b.FloatInitializer("w2", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  b.AddNode("Conv", {"x", "w1"}, {"c1"}, "conv1");
  b.AddNode("Conv", {"c1", "w2"}, {"c2"}, "conv2");
  b.AddNode("Concat", {"c1", "c2"}, {"y"}, "concat").Int("axis", 1);
  b.Output("y", DType::kFloat);
  Model m = Import(b.Serialize());
  SectionSearch found = FindPruningSections(m.graph);
  EXPECT_TRUE(found.sections.empty());
  EXPECT_NE(found.rejected[0].find("read by 2 nodes"), std::string::npos)
      << found.rejected[0];
}

TEST(PruningSectionTest, DepthwiseConvIsNeitherEntryNorIntermediate) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w1", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  b.FloatInitializer("dw", std::vector<float>(2, 1.f), {2, 1, 1, 1});
  b.FloatInitializer("w2", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  b.AddNode("Conv", {"x", "w1"}, {"c1"}, "conv1");
  b.AddNode("Conv", {"c1", "dw"}, {"d"}, "dw").Int("group", 2);
  b.AddNode("Conv", {"d", "w2"}, {"y"}, "conv2");
  b.Output("y", DType::kFloat);
  Model m = Import(b.Serialize());
  EXPECT_TRUE(FindPruningSections(m.graph).sections.empty());
}

TEST(ChannelGroupsTest, GroupsSortByNormPerWeightAndKeepTheRemainderLast) {
  // Kernel [5, 2]: squared norms per channel 1, 25, 0, 4, 9 (2 weights
  // each) -> scores (trace 1) 0.5, 12.5, 0, 2, 4.5: order 1, 4, 3, 0, 2.
  Tensor k = Tensor::FromVector<float>({1, 0, 3, 4, 0, 0, 0, 2, 3, 0}, {5, 2});
  ChannelGroups g = GroupChannels({1, 1, 1, 1, 1}, k, 0, 2);
  ASSERT_EQ(g.groups.size(), 3u);
  EXPECT_EQ(g.groups[0], (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(g.groups[1], (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(g.groups[2], (std::vector<int64_t>{2}));
  // Group score: sum of traces * group norm / group weights:
  // 2 * 34 / 4 = 17; 2 * 5 / 4 = 2.5; 1 * 0 / 2 = 0.
  EXPECT_DOUBLE_EQ(g.scores[0], 17);
  EXPECT_DOUBLE_EQ(g.scores[1], 2.5);
  EXPECT_DOUBLE_EQ(g.scores[2], 0);
}

TEST(ChannelGroupsTest, TracesWeighTheNorms) {
  // Equal norms; trace 3 on channel 2 makes it first.
  Tensor k = Tensor::FromVector<float>({1, 1, 1}, {1, 3});
  ChannelGroups g = GroupChannels({1, 1, 3}, k, 1, 1);
  EXPECT_EQ(g.groups[0], (std::vector<int64_t>{2}));
}

TEST(WeightsMemoryTest, SharedLayerCountsBothAxes) {
  // ChainModel: conv2's w2 [8, 8, 1, 1] loses input channels with section 0
  // and output channels with section 1. Keeping 4 and 2 of 8: w1 4*27,
  // b1 4, BN 4*4, w2 2*4, b2 2, scale 2, w3 4*2; gemm1's section keeps 16.
  Model m = Import(pruning_test::ChainModel());
  SectionSearch found = FindPruningSections(m.graph);
  PrunedWeightsMemory memory(m.graph, found.sections);
  // Unpruned: 216+8+32+64+8+8+32+64+16+80+5 = 533 parameters.
  EXPECT_EQ(memory.unpruned_bytes(), 533 * 4);
  EXPECT_EQ(FloatWeightsBytes(m.graph), 533 * 4);
  const int64_t kept = 108 + 4 + 16 + 8 + 2 + 2 + 8 + 64 + 16 + 80 + 5;
  EXPECT_EQ(memory.Bytes({4, 2, 16}), kept * 4);
}

TEST(GreedyTest, UnprunesTheBestGroupsUntilTheTarget) {
  // Two sections of the dead-channel kind, one tensor each: section sizes
  // 4 channels x 1 weight. Memory = kept0 + kept1 (+ nothing else).
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1});
  b.FloatInitializer("a", {1, 2, 3, 4}, {1, 4});
  b.FloatInitializer("c", {1, 1, 1, 1}, {4, 1});
  b.AddNode("MatMul", {"x", "a"}, {"h"}, "m1");
  b.AddNode("MatMul", {"h", "c"}, {"y"}, "m2");
  b.Output("y", DType::kFloat);
  Model m = Import(b.Serialize());
  SectionSearch found = FindPruningSections(m.graph);
  ASSERT_EQ(found.sections.size(), 1u);
  PrunedWeightsMemory memory(m.graph, found.sections);
  // Each kept channel costs 2 parameters (a column of a, a row of c).
  ChannelGroups g =
      GroupChannels({1, 1, 1, 1}, *m.graph.FindInitializer("a"), 1, 1);
  std::vector<ChannelGroups> groups = {g};
  // Target 20 bytes = 5 parameters: 2 channels (16 bytes); a third would
  // make 24 > 20 and is undone.
  absl::StatusOr<std::vector<int>> kept = GreedyKeptGroups(groups, memory, 20);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ((*kept)[0], 2);
  EXPECT_EQ(g.groups[0], (std::vector<int64_t>{3}));  // the largest weight
  EXPECT_EQ(g.groups[1], (std::vector<int64_t>{2}));
  // Target 7 bytes: below one channel (8 bytes).
  kept = GreedyKeptGroups(groups, memory, 7);
  EXPECT_EQ(kept.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(kept.status().message().find("minimum"), std::string::npos);
}

}  // namespace
}  // namespace quantd::pruning
