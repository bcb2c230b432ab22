// GPTQ's training step against the double pieces it replaces: the float
// grouped-linear products and the raw double forward (direct kernel for
// depthwise layers)
// against the double products (themselves checked by finite differences
// in op_gradients_test), and the fused soft rounding + regularizer + Adam
// against SoftRoundingQuantizer, AddRoundingRegularizationGradient and Adam
// in double (checked in quantizer_gradients_test and quantizers_test), to
// float32's precision; and both split over a pool bit for bit.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/runtime/thread_pool.h"
#include "core/train/adam.h"
#include "core/train/grouped_linear.h"
#include "core/train/rounding_regularizer.h"
#include "core/train/soft_rounding_adam.h"
#include "core/train/weight_quantizers.h"
#include "gtest/gtest.h"
#include "tests/core/train/gradient_test_util.h"

namespace quantd::train {
namespace {

using testing::Random;

// n float32 values (N(0, scale) rounded to float), as double and float.
struct Values {
  std::vector<double> d;
  std::vector<float> f;
};
Values RandomFloats(size_t n, uint64_t seed, double scale = 1.0) {
  Values v;
  for (double x : Random(n, seed, scale)) {
    v.f.push_back(static_cast<float>(x));
    v.d.push_back(v.f.back());
  }
  return v;
}

// Ungrouped (sliced on a pool), grouped, depthwise 3x3 and 5x5, one output.
const std::vector<LinearShape>& Shapes() {
  static const std::vector<LinearShape> shapes = {
      {128, 96, 144, 1}, {130, 257, 9, 1},    {300, 64, 32, 2},
      {128, 48, 9, 48},  {129, 480, 25, 480}, {128, 1, 20, 1}};
  return shapes;
}

struct FloatRun {
  std::vector<float> y, dw;
};

FloatRun RunFloat(const LinearShape& s, const Values& p, const Values& w,
                  const Values& dy, ThreadPool* pool) {
  FloatRun r;
  r.y.assign(s.rows * s.out, -1.0f);
  r.dw.assign(s.out * s.in, -1.0f);  // overwritten
  GroupedLinearForward(s, p.f.data(), w.f.data(), r.y.data(), pool);
  GroupedLinearWeightGradient(s, p.f.data(), dy.f.data(), r.dw.data(), pool);
  return r;
}

// |a - b| within float32 rounding of a sum of n terms of size `term`.
void ExpectClose(const std::vector<float>& a, const std::vector<double>& b,
                 int64_t n, double term, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  const double tol = 4 * n * term * 6e-8;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tol) << what << " " << i;
  }
}

TEST(FloatTraining, GroupedLinearMatchesTheDoubleProducts) {
  for (const LinearShape& s : Shapes()) {
    const Values p = RandomFloats(s.rows * s.groups * s.in, 1);
    const Values w = RandomFloats(s.out * s.in, 2);
    const Values dy = RandomFloats(s.rows * s.out, 3);
    const FloatRun f = RunFloat(s, p, w, dy, nullptr);
    std::vector<double> y, dw(s.out * s.in, 0.0);
    GroupedLinearForward(s, p.d, w.d, {}, &y);
    GroupedLinearBackward(s, p.d, w.d, dy.d, nullptr, &dw, nullptr);
    // Terms are products of two N(0, 1) values: |term| < 25.
    ExpectClose(f.y, y, s.in, 25, "y");
    ExpectClose(f.dw, dw, s.rows, 25, "dw");
  }
}

TEST(FloatTraining, GroupedLinearEqualsOneThreadBitForBit) {
  ThreadPool two(1), three(2);
  for (const LinearShape& s : Shapes()) {
    const Values p = RandomFloats(s.rows * s.groups * s.in, 4);
    const Values w = RandomFloats(s.out * s.in, 5);
    const Values dy = RandomFloats(s.rows * s.out, 6);
    const FloatRun one = RunFloat(s, p, w, dy, nullptr);
    for (ThreadPool* pool : {&two, &three}) {
      const FloatRun many = RunFloat(s, p, w, dy, pool);
      EXPECT_EQ(0, std::memcmp(many.y.data(), one.y.data(),
                               one.y.size() * sizeof(float)))
          << s.rows << "x" << s.out << "x" << s.in << " g" << s.groups;
      EXPECT_EQ(0, std::memcmp(many.dw.data(), one.dw.data(),
                               one.dw.size() * sizeof(float)))
          << s.rows << "x" << s.out << "x" << s.in << " g" << s.groups;
    }
  }
}

// The double raw forward (GPTQ's forward product) against the vector form:
// the same Eigen product bit for bit, the depthwise kernel to double
// rounding; and on a pool bit for bit.
TEST(FloatTraining, DoubleRawForwardMatchesTheVectorForm) {
  ThreadPool pool(2);
  for (const LinearShape& s : Shapes()) {
    const Values p = RandomFloats(s.rows * s.groups * s.in, 7);
    const Values w = RandomFloats(s.out * s.in, 8);
    std::vector<double> expected;
    GroupedLinearForward(s, p.d, w.d, {}, &expected);
    std::vector<double> one(s.rows * s.out), many(s.rows * s.out);
    GroupedLinearForward(s, p.d.data(), w.d.data(), one.data(), nullptr);
    GroupedLinearForward(s, p.d.data(), w.d.data(), many.data(), &pool);
    const bool depthwise = s.groups > 1 && s.groups == s.out;
    for (size_t i = 0; i < one.size(); ++i) {
      if (depthwise) {
        ASSERT_NEAR(one[i], expected[i], 1e-12 * s.in * 25) << i;
      } else {
        ASSERT_EQ(one[i], expected[i]) << i;
      }
    }
    EXPECT_EQ(0,
              std::memcmp(one.data(), many.data(), one.size() * sizeof(double)))
        << s.rows << "x" << s.out << "x" << s.in << " g" << s.groups;
  }
}

// 20,003 weights (five chunks and a partial packet), 4-bit symmetric per
// channel (or UNIFORM, with zero points), and the regularizer's exponents
// over a schedule: off, 20, 11, 2.
struct SoftCase {
  WeightGridSpec spec;
  QuantGrid grid;
  std::vector<double> w;
};
SoftCase MakeSoftCase(bool uniform) {
  SoftCase c;
  const std::vector<int64_t> shape = {1, 20003};
  c.spec.n_bits = 4;
  if (uniform) {
    c.spec.kind = WeightGridSpec::Kind::kUniform;
    c.spec.range_min = {-0.5};
    c.spec.range_max = {0.9};
  } else {
    c.spec.kind = WeightGridSpec::Kind::kSymmetric;
    c.spec.thresholds = {0.8};
  }
  c.grid = GridOf(c.spec);
  EXPECT_TRUE(SetChannelLayout(shape, 0, &c.grid).ok());
  c.w = Random(20003, 7, 0.3);
  return c;
}
const double kBetas[] = {-1, -1, 20, 20, 11, 11, 2, 2};

TEST(FloatTraining, SoftRoundingAdamMatchesTheDoublePieces) {
  for (bool uniform : {false, true}) {
    const SoftCase c = MakeSoftCase(uniform);
    auto q = MakeSoftRoundingQuantizer(c.spec, c.grid, c.w);
    TrainableParam* v = q->Params()[0];
    Adam adam(0.03);
    adam.Add(v);
    SoftRoundingAdam fused(c.spec, c.grid, c.w, 0.03);
    const double lsb = c.grid.scale[0];
    std::vector<double> wq;
    uint64_t seed = 100;
    for (double beta : kBetas) {
      q->Forward(&wq);
      for (size_t i = 0; i < wq.size(); ++i) {
        ASSERT_NEAR(fused.weights()[i], wq[i], 1e-5 * lsb) << uniform << i;
      }
      const Values g = RandomFloats(wq.size(), ++seed);
      q->Backward(g.d);
      if (beta > 0) {
        AddRoundingRegularizationGradient(0.01, beta, *SoftRoundingSigmoids(*q),
                                          v, nullptr);
      }
      adam.Step();
      adam.ZeroGrad();
      std::copy(g.f.begin(), g.f.end(), fused.weight_gradient());
      fused.Step(0.01, beta, nullptr);
      for (size_t i = 0; i < wq.size(); ++i) {
        // Adam's moves are lr-sized; float32 keeps V to ~1e-6 of them.
        ASSERT_NEAR(fused.v()[i], v->value[i], 1e-4) << uniform << i;
      }
    }
    const FixedWeights a = fused.Convert(), b = q->Convert();
    EXPECT_EQ(a.ints, b.ints) << uniform;
    EXPECT_EQ(a.grid.scale, b.grid.scale);
    EXPECT_EQ(a.grid.zero_point, b.grid.zero_point);
  }
}

TEST(FloatTraining, SoftRoundingAdamEqualsOneThreadBitForBit) {
  const SoftCase c = MakeSoftCase(false);
  ThreadPool pool(2);
  SoftRoundingAdam one(c.spec, c.grid, c.w, 0.03, nullptr);
  SoftRoundingAdam many(c.spec, c.grid, c.w, 0.03, &pool);
  uint64_t seed = 200;
  for (double beta : kBetas) {
    const Values g = RandomFloats(c.w.size(), ++seed);
    for (SoftRoundingAdam* a : {&one, &many}) {
      std::copy(g.f.begin(), g.f.end(), a->weight_gradient());
    }
    one.Step(0.01, beta, nullptr);
    many.Step(0.01, beta, &pool);
    ASSERT_EQ(0, std::memcmp(one.v(), many.v(), c.w.size() * sizeof(float)));
    ASSERT_EQ(0, std::memcmp(one.weights(), many.weights(),
                             c.w.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace quantd::train
