// Shift-negative correction of an Add of a constant
// (shift_negative_constant_add): x -> Add(x, 0.2) "lab" -> Conv 3x3 (pads 1)
// "conv", the Add's output 'a' planned as signed 8-bit POWER_OF_TWO with
// threshold 16 and statistics min -0.1, max 10 (|min| / T = 0.00625).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/corrections/shift_negative.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/corrections/snc_test_state.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::FloatNear;
using ::testing::Pointwise;

constexpr float kWeights[9] = {0.5f, -1, 2, 0.25f, 1, -0.5f, 1.5f, 0, -2};

Model ConstantAddConvModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 3, 3});
  b.FloatInitializer("c", {0.2f}, {});
  b.FloatInitializer("w", std::vector<float>(kWeights, kWeights + 9),
                     {1, 1, 3, 3});
  b.FloatInitializer("b", {0.5f}, {1});
  b.AddNode("Add", {"x", "c"}, {"a"}, "lab");
  b.AddNode("Conv", {"a", "w", "b"}, {"y"}, "conv").Ints("pads", {1, 1, 1, 1});
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

JobState ConstantAddConvState() {
  JobState s;
  s.model = ConstantAddConvModel();
  s.plans.resize(2);
  PlanSncActivation(0, "a", &s);
  s.options.shift_negative_activation_correction = false;
  s.options.shift_negative_constant_add = true;
  return s;
}

std::vector<float> RunFloat(const Model& m, const std::vector<float>& x) {
  auto exec = Executor::Create(std::make_shared<const Model>(m));
  EXPECT_TRUE(exec.ok()) << exec.status();
  auto out = (*exec)->Run({{"x", Tensor::FromVector<float>(x, {1, 1, 3, 3})}});
  EXPECT_TRUE(out.ok()) << out.status();
  auto y = out->at("y").span<float>();
  return std::vector<float>(y.begin(), y.end());
}

TEST(ShiftConstantAdd, TheConstantTakesTheShiftAndTheConvsBiasAbsorbsIt) {
  JobState s = ConstantAddConvState();
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  const Graph& g = s.model.graph;
  // No Add is inserted: lab, the Pad, conv.
  ASSERT_EQ(g.nodes.size(), 3u);
  const Node& add = g.nodes[0];
  EXPECT_EQ(add.name, "lab");
  // Unsigned grid of T=16 at 8 bits: step 1/16; the smallest point >= 0.1
  // is 2/16 = 0.125, added to the constant 0.2.
  EXPECT_THAT(g.FindInitializer(add.inputs[1])->span<float>(),
              ElementsAre(FloatEq(0.325f)));
  // The Pad pads with the shift; the Conv pads no more.
  const Node& pad = g.nodes[1];
  ASSERT_EQ(pad.op_type, "Pad");
  EXPECT_EQ(pad.inputs[0], "a");
  EXPECT_THAT(g.FindInitializer(pad.inputs[2])->span<float>(),
              ElementsAre(FloatEq(0.125f)));
  const Node& conv = g.nodes[2];
  EXPECT_EQ(conv.inputs[0], pad.outputs[0]);
  EXPECT_THAT(conv.GetInts("pads"), ElementsAre(0, 0, 0, 0));
  // b -= 0.125 * sum(W) = 0.5 - 0.125 * 1.75.
  EXPECT_THAT(g.FindInitializer(conv.inputs[2])->span<float>(),
              ElementsAre(FloatEq(0.28125f)));
  // The statistics moved by the shift; the grid selected on them is
  // unsigned, and the Pad keeps it.
  EXPECT_THAT(s.stats["a"].min, DoubleEq(0.025));
  EXPECT_THAT(s.stats["a"].max, DoubleEq(10.125));
  const ActivationParams& a = s.plans[0].activation;
  EXPECT_FALSE(a.is_signed);
  EXPECT_DOUBLE_EQ(a.scale, a.threshold / 256);
  EXPECT_TRUE(s.plans[1].preserving);
  EXPECT_EQ(s.plans[1].activation.scale, a.scale);
}

// The graph computes the same function: every value the Conv reads moved
// by the shift, padding included, and its bias took it back.
TEST(ShiftConstantAdd, TheFloatGraphComputesTheSameOutputs) {
  const std::vector<float> x = {-0.3f, 0.1f, 2, -0.05f, 4, 0.7f, -1, 3, 0.2f};
  const std::vector<float> before = RunFloat(ConstantAddConvModel(), x);
  JobState s = ConstantAddConvState();
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  EXPECT_THAT(RunFloat(s.model, x), Pointwise(FloatNear(1e-5f), before));
}

// The Pad carries the shift exactly: a point of the grid selected after
// it. At 2 bits with T = 1 the shift is 0.25 (unsigned step 1/4 >= 0.2);
// the shifted top bin (center 1.4) then selects T = 2, step 1/2, so the
// shift moves up to 0.5 (top center 1.65: T = 2 again).
TEST(ShiftConstantAdd, ThePadValueIsAPointOfTheSelectedGrid) {
  JobState s = ConstantAddConvState();
  s.options.shift_negative_ratio = 0.5;
  NodePlan& add = s.plans[0];
  add.config.set_activation_n_bits(2);
  add.activation.n_bits = 2;
  add.activation.threshold = 1.0;
  TensorStats& st = s.stats["a"];
  st.min = -0.2;
  st.max = 1.2;
  st.histogram.edges = {-0.2, 0, 1.1, 1.2};
  st.histogram.counts = {1, 0, 10};
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  const Graph& g = s.model.graph;
  ASSERT_EQ(g.nodes.size(), 3u);
  ASSERT_EQ(g.nodes[1].op_type, "Pad");
  const float value = g.FindInitializer(g.nodes[1].inputs[2])->span<float>()[0];
  const ActivationParams& a = s.plans[0].activation;
  EXPECT_DOUBLE_EQ(a.threshold, 2.0);
  EXPECT_FLOAT_EQ(value, 0.5f);
  EXPECT_THAT(g.FindInitializer(g.nodes[0].inputs[1])->span<float>(),
              ElementsAre(FloatEq(0.7f)));
}

TEST(ShiftConstantAdd, OffByDefault) {
  JobState s = ConstantAddConvState();
  s.options = PtqOptions();
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  const Graph& g = s.model.graph;
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].inputs[1], "c");
  EXPECT_TRUE(s.plans[0].activation.is_signed);
}

// An Add whose output is also read outside the Conv (here: a graph output)
// keeps it: the shift would reach that reader.
TEST(ShiftConstantAdd, AnAddWithSeveralReadersIsLeftAlone) {
  JobState s = ConstantAddConvState();
  Graph& g = s.model.graph;
  g.outputs.push_back(g.outputs.front());
  g.outputs.back().name = "a";
  ASSERT_TRUE(ApplyShiftNegativeCorrection(&s).ok());
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].inputs[1], "c");
  EXPECT_TRUE(s.warnings.empty());
}

}  // namespace
}  // namespace quantd
