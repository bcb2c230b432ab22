// Backward passes of the trainable quantizers against finite differences.
// Soft rounding and the rounding regularizer are differentiable in V: the
// oracle is the finite difference of the real forward. STE / LSQ define their
// gradient through the straight-through estimator: the oracle is the finite
// difference of the STE surrogate written out here, round(x) = x + r0 with
// r0 = round(x0) - x0 frozen at the evaluation point (and the clip
// saturation frozen), as in ste_round(x) = x + (round(x) - x).detach().
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "core/train/activation_quantizers.h"
#include "core/train/rounding_regularizer.h"
#include "core/train/weight_quantizers.h"
#include "gtest/gtest.h"
#include "tests/core/train/gradient_test_util.h"

namespace quantd::train {
namespace {

using testing::Dot;
using testing::Random;

double FiniteDifference(const std::function<double()>& loss, double* theta) {
  const double eps = 1e-6, keep = *theta;
  *theta = keep + eps;
  const double up = loss();
  *theta = keep - eps;
  const double down = loss();
  *theta = keep;
  return (up - down) / (2 * eps);
}

TrainableParam* Find(TrainableWeightQuantizer& q, const std::string& name) {
  for (TrainableParam* p : q.Params()) {
    if (p->name == name) return p;
  }
  return nullptr;
}

// Per-channel 4-bit symmetric grid over a [3, 4] kernel (axis 0).
struct Kernel {
  std::vector<int64_t> shape = {3, 4};
  std::vector<double> w = Random(12, 7, 0.4);
  WeightGridSpec spec;
  QuantGrid grid;
  Kernel(WeightGridSpec::Kind kind) {
    spec.kind = kind;
    spec.n_bits = 4;
    spec.thresholds = {0.5, 1.0, 0.7};
    spec.range_min = {-0.6, -1.1, -0.3};
    spec.range_max = {0.5, 0.9, 1.2};
    grid = GridOf(spec);
    EXPECT_TRUE(SetChannelLayout(shape, 0, &grid).ok());
  }
};

TEST(QuantizerGradients, SoftRoundingMatchesFiniteDifferences) {
  for (auto kind :
       {WeightGridSpec::Kind::kSymmetric, WeightGridSpec::Kind::kPowerOfTwo,
        WeightGridSpec::Kind::kUniform}) {
    Kernel k(kind);
    // Inside every channel's grid (the clip is an STE clip, tested below).
    for (double& w : k.w) w = std::min(std::max(w, -0.25), 0.25);
    auto q = MakeSoftRoundingQuantizer(k.spec, k.grid, k.w);
    TrainableParam* v = Find(*q, "soft_rounding_v");
    ASSERT_NE(v, nullptr);
    // Move V off its initial value so some h are near the clip region.
    v->value = Random(v->value.size(), 9, 1.5);
    const std::vector<double> c = Random(k.w.size(), 8);
    const auto loss = [&] {
      std::vector<double> wq;
      q->Forward(&wq);
      return Dot(wq, c);
    };
    v->ZeroGrad();
    std::vector<double> wq;
    q->Forward(&wq);  // Backward is at the last Forward's V
    q->Backward(c);
    for (size_t i = 0; i < v->value.size(); ++i) {
      EXPECT_NEAR(v->grad[i], FiniteDifference(loss, &v->value[i]), 1e-7)
          << "element " << i;
    }
  }
}

TEST(QuantizerGradients, SoftRoundingClipPassesTheGradient) {
  // w/s = 9.5 on a [-8, 7] grid: clipped forward, yet dwq/dV = s * h'(V)
  // (MCT's ste_clip).
  Kernel k(WeightGridSpec::Kind::kSymmetric);
  const std::vector<double> w = {9.5 * k.grid.scale[0]};
  QuantGrid grid = GridOf(k.spec);
  grid.scale = {grid.scale[0]};
  grid.zero_point = {0};
  auto q = MakeSoftRoundingQuantizer(k.spec, grid, w);
  TrainableParam* v = q->Params()[0];
  std::vector<double> wq;
  q->Forward(&wq);
  EXPECT_DOUBLE_EQ(wq[0], 7 * grid.scale[0]);
  q->Backward({1.0});
  EXPECT_DOUBLE_EQ(v->grad[0], grid.scale[0] * SoftRoundingDh(v->value[0]));
  EXPECT_GT(v->grad[0], 0);
}

TEST(QuantizerGradients, RoundingRegularizerMatchesFiniteDifferences) {
  TrainableParam v;
  v.value = Random(20, 3, 1.2);
  for (double beta : {20.0, 7.5, 2.0}) {
    v.ZeroGrad();
    AddRoundingRegularization(0.01, beta, &v);
    const std::vector<double> grad = v.grad;
    const auto loss = [&] {
      TrainableParam copy = v;
      return AddRoundingRegularization(0.01, beta, &copy);
    };
    for (size_t i = 0; i < v.value.size(); ++i) {
      EXPECT_NEAR(grad[i], FiniteDifference(loss, &v.value[i]), 1e-8)
          << "beta " << beta << " element " << i;
    }
  }
}

TEST(QuantizerGradients, SteWeightsPassTheGradientThrough) {
  Kernel k(WeightGridSpec::Kind::kSymmetric);
  auto q = MakeSteWeightQuantizer(k.spec, k.grid, k.w);
  TrainableParam* w = Find(*q, "weights");
  const std::vector<double> c = Random(k.w.size(), 4);
  // Surrogate: wq = s * (w/s + r0) = w + s * r0 -> dL/dw = c.
  std::vector<double> r0(k.w.size());
  for (size_t i = 0; i < k.w.size(); ++i) {
    const double s = k.grid.scale[k.grid.ChannelOf(i)];
    r0[i] = std::nearbyint(k.w[i] / s) - k.w[i] / s;
  }
  const auto surrogate = [&] {
    double l = 0;
    for (size_t i = 0; i < k.w.size(); ++i) {
      const double s = k.grid.scale[k.grid.ChannelOf(i)];
      l += c[i] * s * (w->value[i] / s + r0[i]);
    }
    return l;
  };
  q->Backward(c);
  for (size_t i = 0; i < k.w.size(); ++i) {
    EXPECT_NEAR(w->grad[i], FiniteDifference(surrogate, &w->value[i]), 1e-7);
  }
}

TEST(QuantizerGradients, GptqSteShiftMatchesSurrogate) {
  Kernel k(WeightGridSpec::Kind::kUniform);
  auto q = MakeGptqSteQuantizer(k.spec, k.grid, k.w);
  TrainableParam* u = Find(*q, "ste_shift");
  u->value = Random(u->value.size(), 5, 0.3);
  const std::vector<double> c = Random(k.w.size(), 6);
  // Surrogate: wq = s * (base + u + r0 - z) inside the grid.
  std::vector<double> base(k.w.size()), r0(k.w.size());
  for (size_t i = 0; i < k.w.size(); ++i) {
    const int64_t ch = k.grid.ChannelOf(i);
    base[i] = std::nearbyint(k.w[i] / k.grid.scale[ch] + k.grid.zero_point[ch]);
    r0[i] = std::nearbyint(base[i] + u->value[i]) - (base[i] + u->value[i]);
  }
  const auto surrogate = [&] {
    double l = 0;
    for (size_t i = 0; i < k.w.size(); ++i) {
      const int64_t ch = k.grid.ChannelOf(i);
      const double x = base[i] + u->value[i] + r0[i];
      if (x < k.grid.qmin || x > k.grid.qmax) continue;  // clip: no gradient
      l += c[i] * k.grid.scale[ch] * (x - k.grid.zero_point[ch]);
    }
    return l;
  };
  u->ZeroGrad();
  q->Backward(c);
  for (size_t i = 0; i < k.w.size(); ++i) {
    EXPECT_NEAR(u->grad[i], FiniteDifference(surrogate, &u->value[i]), 1e-7);
  }
}

// LSQ surrogate for weights (and activations): y = s * clip(x + r0) + a with
// x = (w - a) / s, r0 frozen and the in-range status frozen; the step's
// gradient is scaled by gs.
struct LsqSurrogate {
  std::vector<double> r0;
  std::vector<char> in;
  double qmin, qmax;
  // s(c), a(c) from the parameters; channel(i).
  double Eval(const std::vector<double>& w, const std::vector<double>& c,
              const std::function<double(int64_t)>& s,
              const std::function<double(int64_t)>& a,
              const std::function<int64_t(size_t)>& ch) const {
    double l = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const double si = s(ch(i)), ai = a(ch(i));
      const double x = (w[i] - ai) / si;
      const double q =
          in[i] ? x + r0[i] : std::min(std::max(x + r0[i], qmin), qmax);
      // Outside the range q is the (frozen) bound.
      l += c[i] * (si * (in[i] ? q : std::nearbyint(q)) + ai);
    }
    return l;
  }
};

TEST(QuantizerGradients, LsqSymmetricWeightsMatchSurrogate) {
  Kernel k(WeightGridSpec::Kind::kSymmetric);
  // Make some weights saturate: channel 0 threshold 0.5, weights up to ~1.
  auto q = MakeLsqWeightQuantizer(k.spec, k.grid, k.w);
  TrainableParam* w = Find(*q, "weights");
  TrainableParam* t = Find(*q, "threshold");
  ASSERT_NE(t, nullptr);
  const double levels = 8, gs = 1.0 / std::sqrt(7.0 * 3);
  const std::vector<double> c = Random(k.w.size(), 12);
  LsqSurrogate sur{{}, {}, -8, 7};
  for (size_t i = 0; i < k.w.size(); ++i) {
    const double x = k.w[i] / (t->value[k.grid.ChannelOf(i)] / levels);
    sur.r0.push_back(std::nearbyint(x) - x);
    sur.in.push_back(std::nearbyint(x) >= -8 && std::nearbyint(x) <= 7);
  }
  // The step gradient is scaled by gs: evaluate the surrogate with the
  // threshold scaled so that d/dT' = gs * d/dT.
  std::vector<double> tt = t->value;
  const auto loss = [&] {
    return sur.Eval(
        w->value, c, [&](int64_t ch) { return tt[ch] / levels; },
        [](int64_t) { return 0.0; },
        [&](size_t i) { return k.grid.ChannelOf(i); });
  };
  std::vector<double> wq;
  q->Forward(&wq);
  q->Backward(c);
  for (size_t i = 0; i < k.w.size(); ++i) {
    EXPECT_NEAR(w->grad[i], FiniteDifference(loss, &w->value[i]), 1e-7);
  }
  for (size_t ch = 0; ch < tt.size(); ++ch) {
    EXPECT_NEAR(t->grad[ch], gs * FiniteDifference(loss, &tt[ch]), 1e-6)
        << "channel " << ch;
  }
}

TEST(QuantizerGradients, LsqUniformWeightsMatchSurrogate) {
  Kernel k(WeightGridSpec::Kind::kUniform);
  auto q = MakeLsqWeightQuantizer(k.spec, k.grid, k.w);
  TrainableParam* w = Find(*q, "weights");
  TrainableParam* lo = Find(*q, "range_min");
  TrainableParam* hi = Find(*q, "range_max");
  ASSERT_NE(hi, nullptr);
  const double n = 15, gs = 1.0 / std::sqrt(15.0 * 3);
  std::vector<double> a = lo->value, b = hi->value;
  const auto step = [&](int64_t ch) { return (b[ch] - a[ch]) / n; };
  const std::vector<double> c = Random(k.w.size(), 13);
  LsqSurrogate sur{{}, {}, 0, n};
  for (size_t i = 0; i < k.w.size(); ++i) {
    const int64_t ch = k.grid.ChannelOf(i);
    const double x = (k.w[i] - a[ch]) / step(ch);
    sur.r0.push_back(std::nearbyint(x) - x);
    sur.in.push_back(std::nearbyint(x) >= 0 && std::nearbyint(x) <= n);
  }
  const auto loss = [&] {
    return sur.Eval(
        w->value, c, step, [&](int64_t ch) { return a[ch]; },
        [&](size_t i) { return k.grid.ChannelOf(i); });
  };
  std::vector<double> wq;
  q->Forward(&wq);
  q->Backward(c);
  for (size_t i = 0; i < k.w.size(); ++i) {
    EXPECT_NEAR(w->grad[i], FiniteDifference(loss, &w->value[i]), 1e-7);
  }
  for (size_t ch = 0; ch < a.size(); ++ch) {
    EXPECT_NEAR(lo->grad[ch], gs * FiniteDifference(loss, &a[ch]), 1e-6);
    EXPECT_NEAR(hi->grad[ch], gs * FiniteDifference(loss, &b[ch]), 1e-6);
  }
}

TEST(QuantizerGradients, SteActivationPassesInsideAndStopsOutside) {
  ActivationGridSpec spec;  // PoT, 8 bits, unsigned, T = 2: step 2/256
  spec.threshold = 2;
  auto q = MakeSteActivationQuantizer(spec);
  const std::vector<double> x = {-0.5, 0.1, 1.3, 1.99, 2.5};
  std::vector<double> y, dx;
  q->Forward(x, &y);
  q->Backward({1, 1, 1, 1, 1}, &dx);
  // Grid [0, 255 * 2/256]: -0.5 and 2.5 lie outside.
  EXPECT_EQ(dx, (std::vector<double>{0, 1, 1, 1, 0}));
  EXPECT_DOUBLE_EQ(y[2], std::nearbyint(1.3 * 128) / 128);
}

TEST(QuantizerGradients, LsqActivationMatchesSurrogate) {
  for (auto kind :
       {WeightGridSpec::Kind::kSymmetric, WeightGridSpec::Kind::kUniform}) {
    ActivationGridSpec spec;
    spec.kind = kind;
    spec.n_bits = 4;
    spec.is_signed = true;
    spec.threshold = 1.5;
    spec.range_min = -1.2, spec.range_max = 1.8;
    const int64_t channels = 4;
    auto q = MakeLsqActivationQuantizer(spec, channels);
    auto params = q->Params();
    const std::vector<double> x = Random(16, 21, 1.2);
    const std::vector<double> c = Random(16, 22);
    const bool uniform = kind == WeightGridSpec::Kind::kUniform;
    const double qmin = uniform ? 0 : -8, qmax = uniform ? 15 : 7;
    std::vector<double> lo = params[0]->value;
    std::vector<double> hi = uniform ? params[1]->value : lo;
    const auto step = [&](int64_t) {
      return uniform ? (hi[0] - lo[0]) / qmax : lo[0] / 8;
    };
    const auto offset = [&](int64_t) { return uniform ? lo[0] : 0.0; };
    LsqSurrogate sur{{}, {}, qmin, qmax};
    for (double v : x) {
      const double xs = (v - offset(0)) / step(0);
      sur.r0.push_back(std::nearbyint(xs) - xs);
      sur.in.push_back(std::nearbyint(xs) >= qmin &&
                       std::nearbyint(xs) <= qmax);
    }
    std::vector<double> xv = x;
    const auto loss = [&] {
      return sur.Eval(xv, c, step, offset, [](size_t) { return 0; });
    };
    std::vector<double> y, dx;
    q->Forward(x, &y);
    q->Backward(c, &dx);
    const double gs = 1.0 / std::sqrt(qmax * channels);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(dx[i], FiniteDifference(loss, &xv[i]), 1e-7);
    }
    EXPECT_NEAR(params[0]->grad[0], gs * FiniteDifference(loss, &lo[0]), 1e-6);
    if (uniform) {
      EXPECT_NEAR(params[1]->grad[0], gs * FiniteDifference(loss, &hi[0]),
                  1e-6);
    }
  }
}

}  // namespace
}  // namespace quantd::train
