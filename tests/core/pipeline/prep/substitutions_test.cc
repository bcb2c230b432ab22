// Graph substitutions of the PTQ pipeline with hand-derived numbers:
// hard-swish fusion, ReLU bound to a power of two, softmax shift, concat
// threshold update, and the shift-negative correction's padding and
// parameter search.
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "core/pipeline/corrections/post_statistics.h"
#include "core/pipeline/corrections/shift_negative.h"
#include "core/pipeline/prep/graph_prep.h"
#include "core/pipeline/prep/hard_swish_fusion.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/corrections/snc_test_state.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::FloatNear;

// x * relu6(x + 3) / 6, by hand.
float HardSwish(float x) {
  return x * std::min(6.0f, std::max(0.0f, x + 3.0f)) / 6.0f;
}

// Paddle's decomposed hard-swish of "x" into "y": Div(Mul(x, Clip(Add(x, 3),
// 0, 6)), 6), the Clip's output named "c".
void AddPaddleHardSwish(OnnxModelBuilder* b) {
  b->FloatInitializer("three", {3}, {});
  b->FloatInitializer("zero", {0}, {});
  b->FloatInitializer("six", {6}, {});
  b->AddNode("Add", {"x", "three"}, {"a"}, "add");
  b->AddNode("Clip", {"a", "zero", "six"}, {"c"}, "clip");
  b->AddNode("Mul", {"x", "c"}, {"m"}, "mul");
  b->AddNode("Div", {"m", "six"}, {"y"}, "div");
}

std::vector<float> RunModel(const Model& m, const std::vector<float>& x) {
  auto exec = Executor::Create(std::make_shared<const Model>(m));
  EXPECT_TRUE(exec.ok()) << exec.status();
  std::map<std::string, Tensor> feeds;
  feeds["x"] =
      Tensor::FromVector<float>(x, {1, static_cast<int64_t>(x.size())});
  auto out = (*exec)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status();
  auto s = out->at("y").span<float>();
  return std::vector<float>(s.begin(), s.end());
}

TEST(HardSwishFusion, PaddleAddClipMulDivBecomesOneHardSwish) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 5});
  AddPaddleHardSwish(&b);  // y = hard-swish(x), relu6 output "c"
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  auto n = FuseHardSwish(&*m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(m->graph.nodes.size(), 1u);
  EXPECT_EQ(m->graph.nodes[0].op_type, "HardSwish");
  EXPECT_EQ(m->graph.nodes[0].inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(m->DefaultOpset(), 14);
  // -4 -> 0; -1.5 -> -1.5 * 1.5 / 6 = -0.375; 0 -> 0; 1 -> 4/6; 4 -> 4.
  EXPECT_THAT(RunModel(*m, {-4, -1.5f, 0, 1, 4}),
              ElementsAre(FloatEq(HardSwish(-4)), FloatEq(-0.375f), FloatEq(0),
                          FloatNear(4.0f / 6, 1e-6f), FloatEq(4)));
}

TEST(HardSwishFusion, MulByHardSigmoidOfSixthBecomesHardSwish) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.AddNode("HardSigmoid", {"x"}, {"h"}, "hs")
      .Float("alpha", 1.0f / 6)
      .Float("beta", 0.5f);
  b.AddNode("Mul", {"h", "x"}, {"y"}, "mul");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(*FuseHardSwish(&*m), 1);
  ASSERT_EQ(m->graph.nodes.size(), 1u);
  EXPECT_EQ(m->graph.nodes[0].op_type, "HardSwish");
}

TEST(HardSwishFusion, SeBlockHardSigmoidIsNotAHardSwish) {
  // PaddleOCR's SE gate: HardSigmoid(slope 0.2) times another tensor.
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.AddNode("HardSigmoid", {"x"}, {"h"}, "hs").Float("alpha", 0.2f);
  b.AddNode("Mul", {"h", "x"}, {"y"}, "mul");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*FuseHardSwish(&*m), 0);
  EXPECT_EQ(m->graph.nodes.size(), 2u);
  EXPECT_EQ(m->DefaultOpset(), 13);
}

TEST(HardSwishFusion, IntermediateWithAnotherUseIsLeftAlone) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  AddPaddleHardSwish(&b);  // y = hard-swish(x), relu6 output "c"
  b.Output("y", DType::kFloat);
  b.Output("c", DType::kFloat);  // the relu6 is also a model output
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*FuseHardSwish(&*m), 0);
  EXPECT_EQ(m->graph.nodes.size(), 4u);
}

TEST(MatMulAddFusion, MatMulPlusConstantBiasBecomesGemm) {
  // y = x W + b with W = [[1, 2], [3, 4]], b = [10, 20]: x = [1, 1] gives
  // [1 + 3 + 10, 2 + 4 + 20] = [14, 26].
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.FloatInitializer("w", {1, 2, 3, 4}, {2, 2});
  b.FloatInitializer("b", {10, 20}, {2});
  b.AddNode("MatMul", {"x", "w"}, {"m"}, "fc");
  b.AddNode("Add", {"m", "b"}, {"y"}, "bias");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(InferShapes(&*m).ok());
  auto n = FuseMatMulAdd(&*m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(m->graph.nodes.size(), 1u);
  EXPECT_EQ(m->graph.nodes[0].op_type, "Gemm");
  EXPECT_EQ(m->graph.nodes[0].inputs,
            (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_THAT(RunModel(*m, {1, 1}), ElementsAre(FloatEq(14), FloatEq(26)));
}

TEST(ReluBound, Relu6BetweenConvsMovesToBoundEight) {
  // s = 6 / 8 = 0.75: W1 / s, b1 / s, Clip max 8, W2 * s.
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 1, 1});
  b.FloatInitializer("w1", {3}, {1, 1, 1, 1});
  b.FloatInitializer("b1", {1.5f}, {1});
  b.FloatInitializer("w2", {2}, {1, 1, 1, 1});
  b.FloatInitializer("zero", {0}, {});
  b.FloatInitializer("six", {6}, {});
  b.AddNode("Conv", {"x", "w1", "b1"}, {"h"}, "c1");
  b.AddNode("Clip", {"h", "zero", "six"}, {"r"}, "relu6");
  b.AddNode("Conv", {"r", "w2"}, {"y"}, "c2");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  auto n = ReluBoundToPowerOfTwo(&*m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  const Graph& g = m->graph;
  EXPECT_THAT(g.FindInitializer(g.nodes[0].inputs[1])->span<float>(),
              ElementsAre(FloatEq(4.0f)));
  EXPECT_THAT(g.FindInitializer(g.nodes[0].inputs[2])->span<float>(),
              ElementsAre(FloatEq(2.0f)));
  EXPECT_THAT(g.FindInitializer(g.nodes[1].inputs[2])->span<float>(),
              ElementsAre(FloatEq(8.0f)));
  EXPECT_THAT(g.FindInitializer(g.nodes[2].inputs[1])->span<float>(),
              ElementsAre(FloatEq(1.5f)));
}

TEST(ReluBound, PowerOfTwoBoundIsLeftAlone) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 1, 1});
  b.FloatInitializer("w1", {3}, {1, 1, 1, 1});
  b.FloatInitializer("w2", {2}, {1, 1, 1, 1});
  b.FloatInitializer("zero", {0}, {});
  b.FloatInitializer("four", {4}, {});
  b.AddNode("Conv", {"x", "w1"}, {"h"}, "c1");
  b.AddNode("Clip", {"h", "zero", "four"}, {"r"}, "clip");
  b.AddNode("Conv", {"r", "w2"}, {"y"}, "c2");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*ReluBoundToPowerOfTwo(&*m), 0);
}

// Gemm -> Softmax with an 8-bit signed PoT activation on the logits.
JobState GemmSoftmaxState() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.FloatInitializer("w", {1, 0, 0, 1}, {2, 2});
  b.FloatInitializer("b", {1, 2}, {2});
  b.AddNode("Gemm", {"x", "w", "b"}, {"l"}, "fc");
  b.AddNode("Softmax", {"l"}, {"y"}, "softmax");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  JobState s;
  s.model = *m;
  s.plans.resize(2);
  NodePlan& p = s.plans[0];
  p.quantize_activation = true;
  p.config.set_activation_n_bits(8);
  p.config.set_activation_quantization_method(
      v1::QUANTIZATION_METHOD_POWER_OF_TWO);
  p.activation.threshold = 16;
  TensorStats& st = s.stats["l"];
  st.min = 2;
  st.max = 10;
  for (int i = 0; i <= 8; ++i) st.histogram.edges.push_back(2 + i);
  st.histogram.counts.assign(8, 1.0);
  return s;
}

TEST(SoftmaxShift, LogitsAreCenteredThroughTheBias) {
  JobState s = GemmSoftmaxState();
  s.options.activation_error_method = quantizers::ErrorMethod::kNoClipping;
  ASSERT_TRUE(ApplySoftmaxShift(&s).ok());
  // shift = -(10 + 2) / 2 = -6: b = [1 - 6, 2 - 6]; the logits now span
  // [-4, 4], so the no-clipping PoT threshold is 4 (was 16), signed.
  const Graph& g = s.model.graph;
  EXPECT_THAT(g.FindInitializer(g.nodes[0].inputs[2])->span<float>(),
              ElementsAre(FloatEq(-5), FloatEq(-4)));
  EXPECT_DOUBLE_EQ(s.stats["l"].min, -4);
  EXPECT_DOUBLE_EQ(s.stats["l"].max, 4);
  EXPECT_DOUBLE_EQ(s.plans[0].activation.threshold, 4);
  EXPECT_TRUE(s.plans[0].activation.is_signed);
}

TEST(ConcatThresholdUpdate, SoleConsumerInputsTakeTheConcatThreshold) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.AddNode("Relu", {"x"}, {"a"}, "r1");
  b.AddNode("Sigmoid", {"x"}, {"c"}, "s1");
  b.AddNode("Concat", {"a", "c"}, {"y"}, "cat").Int("axis", 1);
  b.AddNode("Relu", {"c"}, {"z"}, "r2");  // c has a second consumer
  b.Output("y", DType::kFloat);
  b.Output("z", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  JobState s;
  s.model = *m;
  s.plans.resize(4);
  auto set = [](NodePlan* p, double t, bool is_signed) {
    p->quantize_activation = true;
    p->activation.method = v1::QUANTIZATION_METHOD_POWER_OF_TWO;
    p->activation.n_bits = 8;
    p->activation.threshold = t;
    p->activation.is_signed = is_signed;
  };
  set(&s.plans[0], 2, false);
  set(&s.plans[1], 1, false);
  set(&s.plans[2], 4, false);
  set(&s.plans[3], 1, false);
  ASSERT_TRUE(ApplyConcatThresholdUpdate(&s).ok());
  // r1 feeds only the concat: T = 4, scale 4 / 2^8 unsigned.
  EXPECT_DOUBLE_EQ(s.plans[0].activation.threshold, 4);
  EXPECT_DOUBLE_EQ(s.plans[0].activation.scale, 4.0 / 256);
  EXPECT_DOUBLE_EQ(s.plans[1].activation.threshold, 1);  // two consumers
}

// x -> LeakyRelu -> Conv 3x1 with pads: the shift pads instead of zero.
JobState PaddedSncState() {
  return LeakyReluConvSncState({.x_shape = {1, 1, 1, 3},
                                .w = {1, 1, 1},
                                .w_shape = {1, 1, 1, 3},
                                .pads = {0, 1, 0, 1}});
}

TEST(ShiftNegative, PaddedConvGetsAPadWithTheShiftValue) {
  JobState s = PaddedSncState();
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  const Graph& g = s.model.graph;
  ASSERT_EQ(g.nodes.size(), 4u);  // act, add, pad, conv
  EXPECT_EQ(g.nodes[1].op_type, "Add");
  const Node& pad = g.nodes[2];
  ASSERT_EQ(pad.op_type, "Pad");
  EXPECT_EQ(pad.inputs[0], g.nodes[1].outputs[0]);
  // Conv pads [h0, w0, h1, w1] = [0, 1, 0, 1] -> Pad's [N, C, H, W] begins
  // then ends: [0, 0, 0, 1, 0, 0, 0, 1]; value = shift = 2/16 (see the
  // unpadded case in corrections_test.cc).
  EXPECT_THAT(g.FindInitializer(pad.inputs[1])->span<int64_t>(),
              ElementsAre(0, 0, 0, 1, 0, 0, 0, 1));
  EXPECT_THAT(g.FindInitializer(pad.inputs[2])->span<float>(),
              ElementsAre(FloatEq(0.125f)));
  const Node& conv = g.nodes[3];
  EXPECT_EQ(conv.inputs[0], pad.outputs[0]);
  EXPECT_THAT(conv.GetInts("pads"), ElementsAre(0, 0, 0, 0));
  // The padded tensor keeps the Add's unsigned grid.
  EXPECT_TRUE(s.plans[2].preserving);
  EXPECT_EQ(s.plans[2].activation.scale, s.plans[1].activation.scale);
  EXPECT_FALSE(s.plans[2].activation.is_signed);
}

TEST(ShiftNegative, ParamsSearchPicksTheLowestErrorThresholdAndShift) {
  // 2-bit grids: T = 1 has unsigned points {0, .25, .5, .75} (step .25),
  // 2T = 2 has {0, .5, 1, 1.5} (step .5); the shifts tried are those points.
  // Mass: one count at each left edge, -.25 and 1.0. Squared errors
  // (round half to even, clipped to the grid):
  //   T=1: s=0   -.25->0 (.0625), 1->.75 (.0625)   sum .125
  //        s=.25  0->0 (0),    1.25->.75 (.25)      sum .25   (worse after)
  //   T=2: s=0   -.25->0 (.0625), 1->1 (0)          sum .0625  <- minimum
  //        s=.5   .25->0 (.0625), 1.5->1.5 (0)      sum .0625  (tie: first
  //        kept) s=1    .75->1 (.0625), 2->1.5 (.25)      sum .3125
  // |min| / T = .25 needs shift_negative_ratio >= .25 to apply at all.
  JobState s = PaddedSncState();
  s.options.shift_negative_params_search = true;
  s.options.shift_negative_ratio = 0.5;
  NodePlan& act = s.plans[0];
  act.config.set_activation_n_bits(2);
  act.activation.n_bits = 2;
  act.activation.threshold = 1.0;
  TensorStats& st = s.stats["a"];
  st.min = -0.25;
  st.max = 1.5;
  st.histogram.edges = {-0.25, 1.0, 1.5};
  st.histogram.counts = {1, 1};
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  const Graph& g = s.model.graph;
  ASSERT_EQ(g.nodes[1].op_type, "Add");
  EXPECT_DOUBLE_EQ(s.plans[1].activation.threshold, 2.0);
  EXPECT_THAT(g.FindInitializer(g.nodes[1].inputs[1])->span<float>(),
              ElementsAre(FloatEq(0.0f)));
}

}  // namespace
}  // namespace quantd
