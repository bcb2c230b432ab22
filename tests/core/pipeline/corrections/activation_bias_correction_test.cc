// Activation bias correction (MCT's compute_activation_bias_correction) with
// hand-derived numbers.
#include "core/pipeline/corrections/activation_bias_correction.h"

#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;

// Unsigned 8-bit PoT with threshold 4: scale 4/256 = 1/64.
ActivationParams Unsigned8BitThreshold4(const std::string& t) {
  ActivationParams a;
  a.tensor = t;
  a.method = v1::QUANTIZATION_METHOD_POWER_OF_TWO;
  a.n_bits = 8;
  a.is_signed = false;
  a.threshold = 4;
  a.scale = 1.0 / 64;
  return a;
}

// Edges [0, 0.01, 0.5], counts [3, 1]. Quantized edges: 0 -> 0,
// 0.01 -> round(0.64) / 64 = 0.015625, 0.5 -> 32 / 64 = 0.5. Centers move
// from 0.005 to 0.0078125 and from 0.255 to 0.2578125: both by 0.0028125,
// so d = 0.0028125. The float mean is (3 * 0.005 + 0.255) / 4 = 0.0675, and
// d is 100 * 0.0028125 / 0.0675 = 4.17% of it.
quantizers::Histogram TwoBins() {
  quantizers::Histogram h;
  h.edges = {0, 0.01, 0.5};
  h.counts = {3, 1};
  return h;
}
constexpr double kShift = 0.0028125;

TEST(ActivationMeanShift, IsTheCountWeightedShiftOfBinCenters) {
  auto d = ActivationMeanShift(TwoBins(), Unsigned8BitThreshold4("r"));
  ASSERT_TRUE(d.has_value());
  EXPECT_NEAR(*d, kShift, 1e-9);
}

TEST(ActivationMeanShift, EmptyHistogramHasNone) {
  EXPECT_FALSE(ActivationMeanShift({}, Unsigned8BitThreshold4("r")));
}

// x -> Relu "relu" (output r, quantized) -> `linear` with weight w, bias b.
JobState ReluThen(const std::string& op, std::vector<float> w,
                  std::vector<int64_t> w_shape, std::vector<int64_t> x_shape) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, x_shape);
  b.FloatInitializer("w", w, w_shape);
  b.FloatInitializer("b", {1, 1}, {2});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  b.AddNode(op, {"r", "w", "b"}, {"y"}, "linear");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  JobState s;
  s.model = *m;
  s.plans.resize(2);
  s.plans[0].quantize_activation = true;
  s.plans[0].activation = Unsigned8BitThreshold4("r");
  s.stats["r"].histogram = TwoBins();
  s.options.activation_bias_correction = true;
  return s;
}

std::vector<float> Bias(const JobState& s) {
  const Graph& g = s.model.graph;
  auto v = g.FindInitializer(g.nodes[1].inputs[2])->span<float>();
  return {v.begin(), v.end()};
}

TEST(ActivationBiasCorrection, GemmBiasLosesShiftTimesColumnSums) {
  // W [K=2, N=2] = [[1, 2], [3, 4]]: column sums [4, 6], so
  // b = [1 - 4 d, 1 - 6 d] = [0.98875, 0.983125].
  JobState s = ReluThen("Gemm", {1, 2, 3, 4}, {2, 2}, {1, 2});
  ASSERT_TRUE(ApplyActivationBiasCorrection(&s).ok());
  EXPECT_THAT(Bias(s), ElementsAre(FloatNear(1 - 4 * kShift, 1e-7),
                                   FloatNear(1 - 6 * kShift, 1e-7)));
}

TEST(ActivationBiasCorrection, PointwiseConvUsesRowSums) {
  // W [M=2, C=2, 1, 1] = [[1, 2], [3, 4]]: row sums [3, 7].
  JobState s = ReluThen("Conv", {1, 2, 3, 4}, {2, 2, 1, 1}, {1, 2, 2, 2});
  ASSERT_TRUE(ApplyActivationBiasCorrection(&s).ok());
  EXPECT_THAT(Bias(s), ElementsAre(FloatNear(1 - 3 * kShift, 1e-7),
                                   FloatNear(1 - 7 * kShift, 1e-7)));
}

TEST(ActivationBiasCorrection, LargerKernelsAreLeftAlone) {
  JobState s = ReluThen("Conv", std::vector<float>(2 * 2 * 3 * 3, 1.0f),
                        {2, 2, 3, 3}, {1, 2, 4, 4});
  ASSERT_TRUE(ApplyActivationBiasCorrection(&s).ok());
  EXPECT_THAT(Bias(s), ElementsAre(1, 1));
}

TEST(ActivationBiasCorrection, ThresholdSkipsSmallRelativeShifts) {
  // d is 4.17% of the mean: a 5% threshold skips, a 4% one corrects.
  JobState skip = ReluThen("Gemm", {1, 2, 3, 4}, {2, 2}, {1, 2});
  skip.options.activation_bias_correction_threshold = 5;
  ASSERT_TRUE(ApplyActivationBiasCorrection(&skip).ok());
  EXPECT_THAT(Bias(skip), ElementsAre(1, 1));
  JobState apply = ReluThen("Gemm", {1, 2, 3, 4}, {2, 2}, {1, 2});
  apply.options.activation_bias_correction_threshold = 4;
  ASSERT_TRUE(ApplyActivationBiasCorrection(&apply).ok());
  EXPECT_THAT(Bias(apply), ElementsAre(FloatNear(1 - 4 * kShift, 1e-7),
                                       FloatNear(1 - 6 * kShift, 1e-7)));
}

}  // namespace
}  // namespace quantd
