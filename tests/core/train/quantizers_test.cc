// Trainable quantizers, grids, Adam and the beta schedule against
// hand-derived values.
#include <cmath>
#include <vector>

#include "core/graph/tensor.h"
#include "core/train/adam.h"
#include "core/train/quantizer_config.h"
#include "core/train/rounding_regularizer.h"
#include "core/train/weight_quantizers.h"
#include "gtest/gtest.h"

namespace quantd::train {
namespace {

WeightGridSpec Sym4(double t) {
  WeightGridSpec s;
  s.kind = WeightGridSpec::Kind::kSymmetric;
  s.n_bits = 4;
  s.thresholds = {t};
  return s;
}

TEST(TrainQuantizers, SymmetricGridIsMctsSignedGrid) {
  // T = 1, 4 bits signed: step 1/8, integers [-8, 7].
  const QuantGrid g = GridOf(Sym4(1.0));
  EXPECT_DOUBLE_EQ(g.scale[0], 0.125);
  EXPECT_EQ(g.qmin, -8);
  EXPECT_EQ(g.qmax, 7);
}

TEST(TrainQuantizers, UniformGridIncludesZero) {
  // [-0.3, 1.2], 2 bits: s = 0.5, a' = 0.5 * round(-0.6) = -0.5, zero
  // point 1, b' = 1.2 + 0.3 - 0.5 = 1.0.
  WeightGridSpec s;
  s.kind = WeightGridSpec::Kind::kUniform;
  s.n_bits = 2;
  s.range_min = {-0.3};
  s.range_max = {1.2};
  const QuantGrid g = GridOf(s);
  EXPECT_DOUBLE_EQ(g.scale[0], 0.5);
  EXPECT_DOUBLE_EQ(g.zero_point[0], 1);
  EXPECT_EQ(g.qmax, 3);
}

TEST(TrainQuantizers, SoftRoundingStartsAtTheFloatWeights) {
  // h(V0) is the fractional part, so floor(w/s) + h = w/s exactly.
  const std::vector<double> w = {0.30, -0.41, 0.05, 0.77};
  auto q = MakeSoftRoundingQuantizer(Sym4(1.0), GridOf(Sym4(1.0)), w);
  std::vector<double> wq;
  q->Forward(&wq);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(wq[i], w[i], 1e-12);
}

TEST(TrainQuantizers, SoftRoundingConvertsWithHalfThreshold) {
  // w/s = 2.4: floor 2; V >= 0 (h >= 0.5) rounds up to 3, V < 0 down to 2.
  const std::vector<double> w = {0.3, 0.3};
  auto q = MakeSoftRoundingQuantizer(Sym4(1.0), GridOf(Sym4(1.0)), w);
  TrainableParam* v = q->Params()[0];
  v->value = {0.01, -0.01};
  const FixedWeights f = q->Convert();
  EXPECT_EQ(f.ints, (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(f.thresholds, (std::vector<double>{1.0}));
}

TEST(TrainQuantizers, GptqSteShiftIsBoundedToOneLsb) {
  const std::vector<double> w = {0.3};  // w/s = 2.4 -> base 2
  auto q = MakeGptqSteQuantizer(Sym4(1.0), GridOf(Sym4(1.0)), w);
  q->Params()[0]->value = {5.0};
  q->AfterStep();
  EXPECT_EQ(q->Params()[0]->value[0], 1.0);
  EXPECT_EQ(q->Convert().ints, (std::vector<int32_t>{3}));
}

TEST(TrainQuantizers, LsqPowerOfTwoThresholdIsResnapped) {
  WeightGridSpec s = Sym4(0.5);
  s.kind = WeightGridSpec::Kind::kPowerOfTwo;
  auto q = MakeLsqWeightQuantizer(s, GridOf(s), {0.2});
  TrainableParam* t = q->Params()[1];
  ASSERT_EQ(t->name, "threshold");
  t->value = {0.3};  // trained off the power-of-two grid
  const FixedWeights f = q->Convert();
  // 2^ceil(log2 0.3) = 0.5; step 1/16; 0.2 * 16 = 3.2 -> 3.
  EXPECT_EQ(f.thresholds, (std::vector<double>{0.5}));
  EXPECT_DOUBLE_EQ(f.grid.scale[0], 0.5 / 8);
  EXPECT_EQ(f.ints, (std::vector<int32_t>{3}));
}

TEST(TrainQuantizers, AdamFirstStepMovesByTheLearningRate) {
  // Step 1: m_hat = g, v_hat = g^2, update = lr * g / (|g| + eps).
  TrainableParam p;
  p.value = {1.0, -2.0};
  p.grad = {0.5, -3.0};
  Adam adam(0.1);
  adam.Add(&p);
  adam.Step();
  EXPECT_NEAR(p.value[0], 1.0 - 0.1, 1e-7);
  EXPECT_NEAR(p.value[1], -2.0 + 0.1, 1e-7);
}

TEST(TrainQuantizers, BetaAnnealsFrom20To2AfterWarmup) {
  const BetaSchedule s;
  EXPECT_LT(s.At(10, 100), 0);          // warm-up: term off
  EXPECT_DOUBLE_EQ(s.At(20, 100), 20);  // start of annealing
  EXPECT_DOUBLE_EQ(s.At(60, 100), 11);  // halfway: 2 + 18 * 0.5
  EXPECT_DOUBLE_EQ(s.At(100, 100), 2);
}

TEST(TrainQuantizers, ConfigFromPtqRejectsLut) {
  WeightParams w;
  w.tensor = "k";
  w.method = v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER;
  auto c = WeightsConfigFromPtq(w, v1::TRAINING_METHOD_SOFT_ROUNDING);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'k'"), std::string::npos);
}

TEST(TrainQuantizers, WriteFixedWeightsKeepsInt8Storage) {
  WeightParams w;
  w.tensor = "k";
  w.int_values = Tensor(DType::kInt32, {2});
  w.storage = DType::kInt8;
  FixedWeights f;
  f.grid = GridOf(Sym4(1.0));
  f.ints = {-8, 7};
  f.thresholds = {1.0};
  ASSERT_TRUE(WriteFixedWeights(f, &w).ok());
  EXPECT_EQ(w.int_values.data<int32_t>()[0], -8);
  EXPECT_EQ(w.int_values.data<int32_t>()[1], 7);
  EXPECT_EQ(w.storage, DType::kInt8);
  EXPECT_DOUBLE_EQ(w.scales[0], 0.125);
  EXPECT_EQ(w.zero_points[0], 0);
}

}  // namespace
}  // namespace quantd::train
