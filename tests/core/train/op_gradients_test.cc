// Backward passes of the block ops against central finite differences of
// their forward passes (double precision): L = sum_i c_i * out_i with fixed
// random c, dL/dtheta from Backward(c) vs (L(theta+e) - L(theta-e)) / 2e.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/train/activations.h"
#include "core/train/conv2d.h"
#include "core/train/grouped_linear.h"
#include "gtest/gtest.h"
#include "tests/core/train/gradient_test_util.h"

namespace quantd::train {
namespace {

using testing::Dot;
using testing::Random;

// Checks every element of `grad` against finite differences of `loss` in
// the elements of *theta.
void ExpectFiniteDifferences(const std::function<double()>& loss,
                             std::vector<double>* theta,
                             const std::vector<double>& grad) {
  ASSERT_EQ(theta->size(), grad.size());
  const double eps = 1e-6;
  for (size_t i = 0; i < theta->size(); ++i) {
    const double keep = (*theta)[i];
    (*theta)[i] = keep + eps;
    const double up = loss();
    (*theta)[i] = keep - eps;
    const double down = loss();
    (*theta)[i] = keep;
    const double fd = (up - down) / (2 * eps);
    EXPECT_NEAR(grad[i], fd, 1e-6 * std::max(1.0, std::fabs(fd)))
        << "element " << i;
  }
}

void CheckConv(const ConvGeometry& g, uint64_t seed) {
  ASSERT_TRUE(ValidateConvGeometry(g).ok());
  std::vector<double> x =
      Random(g.batch * g.channels * g.height * g.width, seed);
  std::vector<double> w =
      Random(g.out_channels * (g.channels / g.groups) * g.kernel_h * g.kernel_w,
             seed + 1);
  std::vector<double> b = Random(g.out_channels, seed + 2);
  const std::vector<double> c =
      Random(g.batch * g.out_channels * g.OutHeight() * g.OutWidth(), seed + 3);
  const auto loss = [&] {
    std::vector<double> y;
    Conv2dForward(g, x, w, b, &y);
    return Dot(y, c);
  };
  std::vector<double> dx, dw(w.size(), 0.0), db(b.size(), 0.0);
  Conv2dBackward(g, x, w, c, &dx, &dw, &db);
  ExpectFiniteDifferences(loss, &x, dx);
  ExpectFiniteDifferences(loss, &w, dw);
  ExpectFiniteDifferences(loss, &b, db);
}

TEST(OpGradients, ConvPlain3x3) {
  ConvGeometry g;
  g.batch = 2, g.channels = 3, g.height = 5, g.width = 6;
  g.out_channels = 4, g.kernel_h = 3, g.kernel_w = 3;
  CheckConv(g, 1);
}

TEST(OpGradients, ConvStridedPaddedDilated) {
  ConvGeometry g;
  g.batch = 1, g.channels = 2, g.height = 7, g.width = 8;
  g.out_channels = 3, g.kernel_h = 3, g.kernel_w = 2;
  g.stride_h = 2, g.stride_w = 3, g.dilation_h = 2, g.dilation_w = 1;
  g.pad_top = 1, g.pad_left = 2, g.pad_bottom = 2, g.pad_right = 0;
  CheckConv(g, 2);
}

TEST(OpGradients, ConvGrouped) {
  ConvGeometry g;
  g.batch = 2, g.channels = 4, g.height = 4, g.width = 4;
  g.out_channels = 6, g.kernel_h = 2, g.kernel_w = 2, g.groups = 2;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  CheckConv(g, 3);
}

TEST(OpGradients, ConvDepthwise) {
  ConvGeometry g;
  g.batch = 1, g.channels = 3, g.height = 6, g.width = 5;
  g.out_channels = 3, g.kernel_h = 3, g.kernel_w = 3, g.groups = 3;
  g.stride_h = g.stride_w = 2;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  CheckConv(g, 4);
}

TEST(OpGradients, Conv1dAsHeightOne) {
  ConvGeometry g;
  g.batch = 2, g.channels = 2, g.height = 1, g.width = 9;
  g.out_channels = 2, g.kernel_h = 1, g.kernel_w = 4, g.stride_w = 2;
  g.pad_left = 1, g.pad_right = 1;
  CheckConv(g, 5);
}

TEST(OpGradients, ConvForwardMatchesHandComputedValue) {
  // x = [[1,2],[3,4]], w = [[1,0],[0,-1]] (2x2 kernel), bias 0.5, no pad:
  // y = 1*1 + 4*(-1) + 0.5 = -2.5.
  ConvGeometry g;
  g.height = g.width = 2, g.kernel_h = g.kernel_w = 2;
  std::vector<double> y;
  Conv2dForward(g, {1, 2, 3, 4}, {1, 0, 0, -1}, {0.5}, &y);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_DOUBLE_EQ(y[0], -2.5);
}

TEST(OpGradients, GroupedLinearAllInputs) {
  LinearShape s;
  s.rows = 5, s.out = 4, s.in = 3, s.groups = 2;
  std::vector<double> p = Random(s.rows * s.groups * s.in, 10);
  std::vector<double> w = Random(s.out * s.in, 11);
  std::vector<double> b = Random(s.out, 12);
  const std::vector<double> c = Random(s.rows * s.out, 13);
  const auto loss = [&] {
    std::vector<double> y;
    GroupedLinearForward(s, p, w, b, &y);
    return Dot(y, c);
  };
  std::vector<double> dp, dw(w.size(), 0.0), db(b.size(), 0.0);
  GroupedLinearBackward(s, p, w, c, &dp, &dw, &db);
  ExpectFiniteDifferences(loss, &p, dp);
  ExpectFiniteDifferences(loss, &w, dw);
  ExpectFiniteDifferences(loss, &b, db);
}

void CheckActivation(const Activation& act, std::vector<double> x) {
  const std::vector<double> c = Random(x.size(), 20);
  const auto loss = [&] {
    std::vector<double> y;
    ActivationForward(act, x, &y);
    return Dot(y, c);
  };
  std::vector<double> dx;
  ActivationBackward(act, x, c, &dx);
  ExpectFiniteDifferences(loss, &x, dx);
}

// Points away from every kink (0, +-3, the clip bounds).
const std::vector<double> kPoints = {-4.1, -2.2, -0.7, -0.1, 0.3,
                                     0.9,  1.7,  2.6,  3.4,  5.0};

TEST(OpGradients, Relu) { CheckActivation({Activation::Kind::kRelu}, kPoints); }
TEST(OpGradients, Clip) {
  CheckActivation({Activation::Kind::kClip, 0.0, 6.0}, kPoints);
}
TEST(OpGradients, LeakyRelu) {
  CheckActivation({Activation::Kind::kLeakyRelu, 0.2}, kPoints);
}
TEST(OpGradients, HardSigmoid) {
  CheckActivation({Activation::Kind::kHardSigmoid, 0.2, 0.5}, kPoints);
}
TEST(OpGradients, HardSwish) {
  CheckActivation({Activation::Kind::kHardSwish, 1.0 / 6, 0.5}, kPoints);
}
TEST(OpGradients, Sigmoid) {
  CheckActivation({Activation::Kind::kSigmoid}, kPoints);
}
TEST(OpGradients, Tanh) { CheckActivation({Activation::Kind::kTanh}, kPoints); }

TEST(OpGradients, HardSwishValuesFollowOnnx) {
  // ONNX HardSwish: x * max(0, min(1, x/6 + 0.5)): f(1) = 1 * 2/3,
  // f(-4) = 0, f(4) = 4.
  const Activation a{Activation::Kind::kHardSwish, 1.0 / 6, 0.5};
  EXPECT_NEAR(ActivationForward(a, 1.0), 2.0 / 3, 1e-15);
  EXPECT_EQ(ActivationForward(a, -4.0), 0.0);
  EXPECT_EQ(ActivationForward(a, 4.0), 4.0);
}

// The float buffer form equals ActivationDerivative per element, bit for
// bit, for every kind (around each kink too).
TEST(OpGradients, ActivationBackwardOnFloatsMatchesPerElementBits) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> x(4096), dy(4096);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = i < 16 ? static_cast<float>(i) * 0.5f - 4.f : u(rng);
    dy[i] = u(rng);
  }
  using Kind = Activation::Kind;
  for (Kind k :
       {Kind::kIdentity, Kind::kRelu, Kind::kClip, Kind::kLeakyRelu,
        Kind::kHardSigmoid, Kind::kHardSwish, Kind::kSigmoid, Kind::kTanh}) {
    Activation act;
    act.kind = k;
    act.a = k == Kind::kClip ? -1.0 : (k == Kind::kHardSwish ? 1.0 / 6 : 0.2);
    act.b = k == Kind::kClip ? 6.0 : 0.5;
    std::vector<float> got(x.size());
    ActivationBackward(act, x.data(), dy.data(), got.data(),
                       static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float want =
          static_cast<float>(ActivationDerivative(act, x[i]) * dy[i]);
      ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
          << ActivationName(act) << " x=" << x[i];
    }
  }
}

}  // namespace
}  // namespace quantd::train
