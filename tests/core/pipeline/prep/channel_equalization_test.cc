// Activation channel equalization (MCT's scale_equalization) with
// hand-derived numbers, and the function kept intact (executor before and
// after on the same input).
#include "core/pipeline/prep/channel_equalization.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatNear;

// For X ~ N(0, 1): E[max(0, X)] = 1/sqrt(2 pi) = 0.3989423 and
// E[max(0, X)^2] = 1/2, so the std is sqrt(0.5 - 1/(2 pi)) = 0.58381937.
constexpr double kStdOfRectifiedStandardNormal = 0.58381937;

TEST(RectifiedGaussianStd, MatchesTheClosedFormAtZeroMean) {
  EXPECT_NEAR(RectifiedGaussianStd(0, 1), kStdOfRectifiedStandardNormal, 1e-6);
  // Scale-equivariant: N(0, 4^2) -> 4x.
  EXPECT_NEAR(RectifiedGaussianStd(0, 4), 4 * kStdOfRectifiedStandardNormal,
              1e-6);
}

TEST(RectifiedGaussianStd, FarFromZeroTheReluIsIdentityOrZero) {
  EXPECT_NEAR(RectifiedGaussianStd(20, 2), 2, 1e-6);   // never clipped
  EXPECT_NEAR(RectifiedGaussianStd(-20, 2), 0, 1e-6);  // always 0
  EXPECT_EQ(RectifiedGaussianStd(3, 0), 0);
}

// x [1, 2, 1, 2] -> Conv 1x1 (identity, 2 -> 2) -> BN(gamma, beta = 0,
// mean 0, var 1) -> Relu -> `second` -> y.
Model ConvBnReluModel(const std::vector<float>& gamma,
                      const std::string& second_op, std::vector<float> w2,
                      std::vector<int64_t> w2_shape, int64_t group) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 1, 2});
  b.FloatInitializer("w1", {1, 0, 0, 1}, {2, 2, 1, 1});
  b.FloatInitializer("gamma", gamma, {2});
  b.FloatInitializer("beta", {0, 0}, {2});
  b.FloatInitializer("mean", {0, 0}, {2});
  b.FloatInitializer("var", {1, 1}, {2});
  b.FloatInitializer("w2", w2, w2_shape);
  b.AddNode("Conv", {"x", "w1"}, {"c"}, "conv1");
  b.AddNode("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"},
            "bn")
      .Float("epsilon", 0.0f);
  b.AddNode("Relu", {"n"}, {"r"}, "relu");
  b.AddNode(second_op, {"r", "w2"}, {"y"}, "conv2").Int("group", group);
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

std::vector<float> RunOnFixedInput(const Model& m) {
  auto exec = Executor::Create(std::make_shared<const Model>(m));
  EXPECT_TRUE(exec.ok()) << exec.status();
  std::map<std::string, Tensor> feeds;
  feeds["x"] =
      Tensor::FromVector<float>({1.5f, -0.5f, 0.25f, 2.0f}, {1, 2, 1, 2});
  auto out = (*exec)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status();
  auto s = out->at("y").span<float>();
  return {s.begin(), s.end()};
}

std::vector<float> Values(const Model& m, const std::string& name) {
  auto s = m.graph.FindInitializer(name)->span<float>();
  return {s.begin(), s.end()};
}

TEST(ChannelEqualization, WideChannelShrinksToUnitStdNarrowStays) {
  // gamma [4, 0.5], beta 0: std after the ReLU 4 * 0.583819 = 2.33528 and
  // 0.29191, so s = [1 / 2.33528, min(3.4257, 1)] = [0.428215, 1].
  Model m = ConvBnReluModel({4, 0.5f}, "Conv", {1, 2, 3, 4}, {2, 2, 1, 1}, 1);
  const std::vector<float> before = RunOnFixedInput(m);
  auto n = EqualizeActivationChannels(&m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  const double s0 = 1 / (4 * kStdOfRectifiedStandardNormal);
  EXPECT_THAT(Values(m, "gamma"),
              ElementsAre(FloatNear(4 * s0, 1e-5), FloatNear(0.5f, 1e-7)));
  // W2 [M=2, C=2]: column c divided by s[c].
  EXPECT_THAT(Values(m, "w2"),
              ElementsAre(FloatNear(1 / s0, 1e-4), FloatNear(2, 1e-7),
                          FloatNear(3 / s0, 1e-4), FloatNear(4, 1e-7)));
  const std::vector<float> after = RunOnFixedInput(m);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_NEAR(after[i], before[i], 1e-5 * std::max(1.0f, before[i]));
  }
}

TEST(ChannelEqualization, DepthwiseSecondLayerScalesItsOwnChannel) {
  Model m = ConvBnReluModel({4, 8}, "Conv", {2, 3}, {2, 1, 1, 1}, 2);
  const std::vector<float> before = RunOnFixedInput(m);
  ASSERT_EQ(*EqualizeActivationChannels(&m), 1);
  const double s0 = 1 / (4 * kStdOfRectifiedStandardNormal);
  const double s1 = 1 / (8 * kStdOfRectifiedStandardNormal);
  EXPECT_THAT(Values(m, "w2"),
              ElementsAre(FloatNear(2 / s0, 1e-4), FloatNear(3 / s1, 1e-4)));
  const std::vector<float> after = RunOnFixedInput(m);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_NEAR(after[i], before[i], 1e-5 * std::max(1.0f, before[i]));
  }
}

TEST(ChannelEqualization, UnitStdChannelsAreLeftAlone) {
  // gamma 1: std after the ReLU 0.58 < 1, so s = 1 everywhere.
  Model m = ConvBnReluModel({1, 1}, "Conv", {1, 2, 3, 4}, {2, 2, 1, 1}, 1);
  EXPECT_EQ(*EqualizeActivationChannels(&m), 0);
  EXPECT_THAT(Values(m, "w2"), ElementsAre(1, 2, 3, 4));
}

TEST(ChannelEqualization, ConvTransposeScalesItsInputAxis) {
  // ConvTranspose W [C=2, M=1, 1, 1]: row c divided by s[c].
  Model m =
      ConvBnReluModel({4, 0.5f}, "ConvTranspose", {5, 7}, {2, 1, 1, 1}, 1);
  const std::vector<float> before = RunOnFixedInput(m);
  ASSERT_EQ(*EqualizeActivationChannels(&m), 1);
  const double s0 = 1 / (4 * kStdOfRectifiedStandardNormal);
  EXPECT_THAT(Values(m, "w2"),
              ElementsAre(FloatNear(5 / s0, 1e-4), FloatNear(7, 1e-7)));
  const std::vector<float> after = RunOnFixedInput(m);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_NEAR(after[i], before[i], 1e-5 * std::max(1.0f, before[i]));
  }
}

}  // namespace
}  // namespace quantd
