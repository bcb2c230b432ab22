// Bias correction and graph collapsing with hand-derived numbers.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "core/pipeline/corrections/bias_correction.h"
#include "core/pipeline/corrections/shift_negative.h"
#include "core/pipeline/prep/graph_prep.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/corrections/snc_test_state.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatEq;

Node MakeConv(int64_t group) {
  Node n;
  n.name = "conv";
  n.op_type = "Conv";
  n.inputs = {"x", "w", "b"};
  n.outputs = {"y"};
  Attribute a;
  a.type = Attribute::Type::kInt;
  a.i = group;
  n.attributes["group"] = a;
  return n;
}

TEST(BiasCorrection, ConvTermIsKernelErrorTimesInputMean) {
  // W [2, 2, 1, 2]; Wq - W = [[.1, .1], [0, -.2]] for out 0 and
  // [[0, 0], [.05, .05]] for out 1. mean_in = [1, 2]:
  // c0 = (.1 + .1) * 1 + (0 - .2) * 2 = -0.2; c1 = 0 * 1 + .1 * 2 = 0.2.
  Tensor w = Tensor::FromVector<float>({1, 1, 1, 1, 1, 1, 1, 1}, {2, 2, 1, 2});
  Tensor wq = Tensor::FromVector<float>(
      {1.1f, 1.1f, 1.0f, 0.8f, 1.0f, 1.0f, 1.05f, 1.05f}, {2, 2, 1, 2});
  auto c = BiasCorrectionTerm(MakeConv(1), w, wq, {1.0, 2.0});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, ElementsAre(DoubleNear(-0.2, 1e-6), DoubleNear(0.2, 1e-6)));
}

TEST(BiasCorrection, DepthwiseConvUsesItsOwnChannelMean) {
  // group 2, W [2, 1, 1, 1]: out m reads input channel m.
  // Wq - W = [.5, -.25], mean [2, 4] -> c = [1, -1].
  Tensor w = Tensor::FromVector<float>({1, 1}, {2, 1, 1, 1});
  Tensor wq = Tensor::FromVector<float>({1.5f, 0.75f}, {2, 1, 1, 1});
  auto c = BiasCorrectionTerm(MakeConv(2), w, wq, {2.0, 4.0});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, ElementsAre(DoubleNear(1.0, 1e-9), DoubleNear(-1.0, 1e-9)));
}

TEST(BiasCorrection, GemmTransBTerm) {
  // W [N=1, K=2] (transB=1): Wq - W = [.5, .5]; mean [1, 3] -> c = 2.
  Node gemm;
  gemm.name = "fc";
  gemm.op_type = "Gemm";
  Attribute t;
  t.type = Attribute::Type::kInt;
  t.i = 1;
  gemm.attributes["transB"] = t;
  Tensor w = Tensor::FromVector<float>({1, 1}, {1, 2});
  Tensor wq = Tensor::FromVector<float>({1.5f, 1.5f}, {1, 2});
  auto c = BiasCorrectionTerm(gemm, w, wq, {1.0, 3.0});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, ElementsAre(DoubleNear(2.0, 1e-9)));
}

TEST(BiasCorrection, ChannelMismatchNamesTheNode) {
  Tensor w = Tensor::FromVector<float>({1, 1}, {2, 1, 1, 1});
  auto c = BiasCorrectionTerm(MakeConv(1), w, w, {1.0, 2.0, 3.0});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()),
              ::testing::HasSubstr("node 'conv' (Conv)"));
}

TEST(Collapsing, LinearConvPairMergesKernelsAndBiases) {
  // Conv1 1x1: W1 [2,1] = [1, 2], b1 = [1, 1]; Conv2 1x1: W2 [1,2] = [3, 4],
  // b2 = 0.5 -> W = 3*1 + 4*2 = 11, b = 3 + 4 + 0.5 = 7.5.
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  b.FloatInitializer("w1", {1, 2}, {2, 1, 1, 1});
  b.FloatInitializer("b1", {1, 1}, {2});
  b.FloatInitializer("w2", {3, 4}, {1, 2, 1, 1});
  b.FloatInitializer("b2", {0.5f}, {1});
  b.AddNode("Conv", {"x", "w1", "b1"}, {"h"}, "c1");
  b.AddNode("Conv", {"h", "w2", "b2"}, {"y"}, "c2");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  auto n = CollapseLinear(&*m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(m->graph.nodes.size(), 1u);
  const Node& conv = m->graph.nodes[0];
  EXPECT_EQ(conv.outputs[0], "y");
  EXPECT_THAT(m->graph.FindInitializer(conv.inputs[1])->span<float>(),
              ElementsAre(FloatEq(11)));
  EXPECT_THAT(m->graph.FindInitializer(conv.inputs[2])->span<float>(),
              ElementsAre(FloatEq(7.5f)));
}

TEST(Collapsing, ResidualAddFoldsIdentityIntoKernelCentre) {
  // y = Conv(x; W=2, 1x1) + x -> Conv(x; W=3).
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  b.FloatInitializer("w", {2}, {1, 1, 1, 1});
  b.AddNode("Conv", {"x", "w"}, {"h"}, "conv");
  b.AddNode("Add", {"h", "x"}, {"y"}, "add");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  auto n = CollapseResidual(&*m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(m->graph.nodes.size(), 1u);
  EXPECT_EQ(m->graph.nodes[0].outputs[0], "y");
  EXPECT_THAT(
      m->graph.FindInitializer(m->graph.nodes[0].inputs[1])->span<float>(),
      ElementsAre(FloatEq(3)));
}

TEST(Collapsing, StridedConvIsNotCollapsed) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 4, 4});
  b.FloatInitializer("w1", {1, 2}, {2, 1, 1, 1});
  b.FloatInitializer("w2", {3, 4}, {1, 2, 1, 1});
  b.AddNode("Conv", {"x", "w1"}, {"h"}, "c1").Ints("strides", {2, 2});
  b.AddNode("Conv", {"h", "w2"}, {"y"}, "c2");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  auto n = CollapseLinear(&*m);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(m->graph.nodes.size(), 2u);
}

TEST(ShiftNegative, SmallNegativeTailIsShiftedIntoTheNextBias) {
  // x -> LeakyRelu -> Conv 1x1 (W = [1, 2] over two input channels... one
  // input channel, two outputs: W [2,1,1,1] = [1, 2], b = [0.5, 0.5]).
  JobState s = LeakyReluConvSncState({.x_shape = {1, 1, 2, 2},
                                      .w = {1, 2},
                                      .w_shape = {2, 1, 1, 1},
                                      .bias = {0.5f, 0.5f}});
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  ASSERT_EQ(s.model.graph.nodes.size(), 3u);
  const Node& add = s.model.graph.nodes[1];
  EXPECT_EQ(add.op_type, "Add");
  // Unsigned grid of T=16 at 8 bits: delta = 1/16; smallest point >= 0.1 is
  // 2/16 = 0.125.
  EXPECT_THAT(s.model.graph.FindInitializer(add.inputs[1])->span<float>(),
              ElementsAre(FloatEq(0.125f)));
  // b -= 0.125 * sum(W[m]) -> [0.5 - 0.125, 0.5 - 0.25].
  const Node& conv = s.model.graph.nodes[2];
  EXPECT_EQ(conv.inputs[0], add.outputs[0]);
  EXPECT_THAT(s.model.graph.FindInitializer(conv.inputs[2])->span<float>(),
              ElementsAre(FloatEq(0.375f), FloatEq(0.25f)));
  // The activation is now 16-bit with the threshold selected at 8 bits, as
  // MCT keeps it (T=16 signed -> step 2^-11; unsigned 2^-12); the Add
  // carries T=16 unsigned 8-bit.
  EXPECT_EQ(s.plans[0].activation.n_bits, 16);
  EXPECT_EQ(s.plans[0].activation.threshold, 16.0);
  EXPECT_DOUBLE_EQ(s.plans[0].activation.scale,
                   s.plans[0].activation.is_signed ? 1.0 / 2048 : 1.0 / 4096);
  EXPECT_TRUE(s.plans[1].quantize_activation);
  EXPECT_FALSE(s.plans[1].activation.is_signed);
  EXPECT_EQ(s.plans[1].activation.threshold, 16.0);
  EXPECT_DOUBLE_EQ(s.plans[1].activation.scale, 1.0 / 16);
}

// The inserted tensors before mixed precision: the Add takes the
// activation's candidates (8 and 4 bits here) with the corrected threshold
// kept for each, the activation's candidates all become 16-bit, and the
// shape of the Add's output joins the calibration's (the resource figures
// price it; not the Pad's, which MCT does not quantize).
TEST(ShiftNegative, InsertedAddTakesTheActivationsCandidatesAndShape) {
  JobState s = LeakyReluConvSncState({.x_shape = {1, 1, 2, 2},
                                      .w = std::vector<float>(9, 1.0f),
                                      .w_shape = {1, 1, 3, 3},
                                      .bias = {0.5f},
                                      .pads = {1, 1, 1, 1}});
  for (int bits : {8, 4}) {
    v1::OpQuantizationConfig* c =
        s.plans[0].qco.add_quantization_configurations();
    *c = s.plans[0].config;
    c->set_activation_n_bits(bits);
  }
  std::map<std::string, std::vector<int64_t>> shapes = {{"a", {1, 1, 2, 2}},
                                                        {"y", {1, 1, 2, 2}}};
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s, &shapes).ok());
  // act, its Add, the Pad, conv.
  const Graph& g = s.model.graph;
  ASSERT_EQ(g.nodes.size(), 4u);
  ASSERT_EQ(g.nodes[1].op_type, "Add");
  ASSERT_EQ(g.nodes[2].op_type, "Pad");
  const NodePlan& add = s.plans[1];
  ASSERT_EQ(add.qco.quantization_configurations_size(), 2);
  EXPECT_EQ(add.qco.quantization_configurations(0).activation_n_bits(), 8);
  EXPECT_EQ(add.qco.quantization_configurations(1).activation_n_bits(), 4);
  ASSERT_TRUE(add.fixed_threshold.has_value());
  EXPECT_EQ(*add.fixed_threshold, 16.0);
  for (const auto& c : s.plans[0].qco.quantization_configurations()) {
    EXPECT_EQ(c.activation_n_bits(), 16);
  }
  EXPECT_THAT(shapes[g.nodes[1].outputs[0]], ElementsAre(1, 1, 2, 2));
  EXPECT_EQ(shapes.count(g.nodes[2].outputs[0]), 0u);
}

TEST(ShiftNegative, LargeNegativeTailIsLeftAlone) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  b.FloatInitializer("w", {1}, {1, 1, 1, 1});
  b.AddNode("LeakyRelu", {"x"}, {"a"}, "act");
  b.AddNode("Conv", {"a", "w"}, {"y"}, "conv");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  JobState s;
  s.model = *m;
  s.plans.resize(2);
  s.plans[0].quantize_activation = true;
  s.plans[0].activation.threshold = 1.0;
  s.plans[0].activation.n_bits = 8;
  s.stats["a"].min = -0.5;  // |min| / T = 0.5 > 0.05
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  EXPECT_EQ(s.model.graph.nodes.size(), 2u);
}

}  // namespace
}  // namespace quantd
