// Hand-derived checks of the quantizers, error functions and selections
// (TFLite style: the derivation is in the comment). The statistics
// corrections are the pipeline's
// (tests/core/pipeline/corrections/corrections_test.cc).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/quantizers/error_functions.h"
#include "core/quantizers/internal/errors.h"
#include "core/quantizers/internal/kernels.h"
#include "core/quantizers/internal/mse_search.h"
#include "core/quantizers/internal/numpy_compat.h"
#include "core/quantizers/internal/quantized_mse.h"
#include "core/quantizers/internal/search.h"
#include "core/quantizers/kmeans.h"
#include "core/quantizers/lut_kmeans.h"
#include "core/quantizers/outlier_filter.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/quantizer.h"
#include "core/quantizers/selection.h"
#include "core/quantizers/signedness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::quantizers {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(QuantizeTensorTest, SignedEightBitGridAndClamping) {
  // T=2, 8 bit signed -> delta=1/64, grid [-2, 2-1/64]. 1/128 is half a step
  // and rounds to even (0); 1.5/64 rounds to 2/64; beyond the ends clamps.
  const std::vector<float> x = {-3, -2, 1.0f / 128, 1.5f / 64, 1.99f, 5};
  EXPECT_THAT(QuantizeTensor(x, 2.0, 8, true),
              ElementsAre(-2, -2, 0, 2.0f / 64, 2 - 1.0f / 64, 2 - 1.0f / 64));
}

TEST(QuantizeTensorTest, UnsignedTwoBitGrid) {
  // T=1, 2 bit unsigned -> delta=1/4, grid [0, 3/4]; 0.125 = half step -> 0,
  // 0.375 = 1.5 steps -> 2 steps.
  const std::vector<float> x = {-1, 0.125f, 0.375f, 0.9f};
  EXPECT_THAT(QuantizeTensor(x, 1.0, 2, false), ElementsAre(0, 0, 0.5f, 0.75f));
}

TEST(UniformQuantizeTensorTest, TwoBitRangeWithZeroOnGrid) {
  // [-1, 2], 2 bits -> scale 1, grid {-1, 0, 1, 2}; -0.5 is half a step
  // above -1 and rounds to even (level 0 -> -1); 0.5 -> level 2 -> 1.
  const std::vector<float> x = {-5, -0.5f, 0.5f, 3};
  EXPECT_THAT(UniformQuantizeTensor(x, -1, 2, 2), ElementsAre(-1, -1, 1, 2));
}

TEST(FixRangeToIncludeZeroTest, PositiveMinBecomesZero) {
  EXPECT_EQ(FixRangeToIncludeZero(0.3, 1.7, 8), std::make_pair(0.0, 1.7));
}

TEST(FixRangeToIncludeZeroTest, NegativeMaxBecomesZero) {
  EXPECT_EQ(FixRangeToIncludeZero(-1.7, -0.2, 8), std::make_pair(-1.7, 0.0));
}

TEST(FixRangeToIncludeZeroTest, StraddlingRangeShiftsToGrid) {
  // [-0.25, 1], 2 bits: s = 1.25/3; round(-0.25/s = -0.6) = -1 -> a = -s,
  // b = 1 + 0.25 - s.
  const double s = 1.25 / 3;
  auto [a, b] = FixRangeToIncludeZero(-0.25, 1.0, 2);
  EXPECT_DOUBLE_EQ(a, -s);
  EXPECT_DOUBLE_EQ(b, 1.25 - s);
}

TEST(MaxPowerOfTwoTest, RoundsUpAndRespectsMinimum) {
  EXPECT_EQ(MaxPowerOfTwo(3.0), 4.0);
  EXPECT_EQ(MaxPowerOfTwo(4.0), 4.0);
  EXPECT_EQ(MaxPowerOfTwo(1e-9), 1.0 / 65536);
}

TEST(GetTensorMaxTest, ExpansionFactorKeepsMaxRepresentable) {
  // max(-min, max * 128/127) for 8 bits: max(1, 3 * 128/127).
  const std::vector<float> x = {-1, 3};
  auto m = GetTensorMax(TensorView{x, {2}}, false, 0, 8);
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ((*m)[0], 3.0 * 128 / 127);
}

TEST(GetTensorMaxTest, RejectsBadAxisWithMessage) {
  const std::vector<float> x = {-1, 3};
  auto m = GetTensorMax(TensorView{x, {2}}, true, 3, 8);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("channel axis 3"));
}

TEST(TensorErrorTest, MseMaeLp) {
  // x - q = {0, -2}: MSE (0 + 4)/2 = 2, MAE (0 + 2)/2 = 1, L3 (0 + 8)/2 = 4.
  const std::vector<float> x = {1, 2}, q = {1, 4};
  EXPECT_EQ(TensorError(ErrorMethod::kMse, x, q), 2);
  EXPECT_EQ(TensorError(ErrorMethod::kMae, x, q), 1);
  EXPECT_EQ(TensorError(ErrorMethod::kLp, x, q, 3), 4);
}

TEST(TensorErrorTest, HmseWeighsByHessian) {
  // h = {1, 0.5}: ((1*0)^2 + (0.5*2)^2) / 2 = 0.5.
  const std::vector<float> x = {1, 2}, q = {1, 4}, h = {1, 0.5f};
  EXPECT_EQ(TensorError(ErrorMethod::kHmse, x, q, 2, h), 0.5);
}

TEST(HistogramErrorTest, MseUsesLeftEdges) {
  // edges {0,1,2} counts {1,3}, q edges {0,2,2}: left-edge errors {0,1},
  // (0*1 + 1*3)/4 = 0.75.
  Histogram h{{0, 1, 2}, {1, 3}, false};
  EXPECT_EQ(HistogramError(ErrorMethod::kMse, h, std::vector<double>{0, 2, 2}),
            0.75);
}

TEST(HistogramErrorTest, KlClipsOutOfRangeMassIntoLastBin) {
  // edges {0,1,2,3}, counts {1,2,3}, identity quantization, range [0,3):
  // bins 0..1 in range, the last bin's 3 join bin 1: p = {1/6, 5/6};
  // quantized mass stays per bin: q = {1/3, 2/3}.
  // KL = 1/6 ln(1/2) + 5/6 ln(5/4) = 0.0704287.
  Histogram h{{0, 1, 2, 3}, {1, 2, 3}, false};
  EXPECT_THAT(KlHistogramError(h, std::vector<double>{0, 1, 2, 3}, 0, 3),
              DoubleNear(std::log(0.5) / 6 + 5 * std::log(1.25) / 6, 1e-6));
}

TEST(ZScoreFilterTest, ZeroesFarBins) {
  // left edges {0,1,2,3}, counts {1,1,1,97}: mu = 2.94, sigma = 0.36932;
  // z = {7.96, 5.25, 2.55, 0.16} -> z > 3 zeroes bins 0 and 1.
  Histogram h{{0, 1, 2, 3, 4}, {1, 1, 1, 97}, false};
  auto f = ZScoreFilter(3.0, h);
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->counts, ElementsAre(0, 0, 1, 97));
}

TEST(SelectionTest, SymmetricNoClippingPerChannel) {
  // ch0 {-1, 0.5}: max(1, 0.5*128/127) = 1; ch1 {0.25, 0.5}:
  // max(-0.25, 0.5*128/127) = 0.503937 (float32).
  const std::vector<float> w = {-1, 0.5f, 0.25f, 0.5f};
  WeightsSearchOptions o;
  o.error_method = ErrorMethod::kNoClipping;
  o.channel_axis = 0;
  auto t = SymmetricSelectionTensor(TensorView{w, {2, 2}}, o);
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->threshold,
              ElementsAre(1.0, static_cast<double>(0.5f * (128.0f / 127))));
}

TEST(SelectionTest, PowerOfTwoNoClipping) {
  // max |w| with expansion = 3*128/127 -> PoT 4.
  const std::vector<float> w = {-1, 3};
  WeightsSearchOptions o;
  o.error_method = ErrorMethod::kNoClipping;
  o.per_channel = false;
  auto t = PowerOfTwoSelectionTensor(TensorView{w, {2}}, o);
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->threshold, ElementsAre(4.0));
}

TEST(SelectionTest, UniformConstantPositiveChannelIncludesZero) {
  // Channel 1 is constant 0.5: min == max > 0 -> min becomes 0.
  const std::vector<float> w = {-1, 1, 0.5f, 0.5f};
  WeightsSearchOptions o;
  o.error_method = ErrorMethod::kNoClipping;
  auto r = UniformSelectionTensor(TensorView{w, {2, 2}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->range_min, ElementsAre(-1, 0));
  EXPECT_THAT(r->range_max, ElementsAre(1, 0.5));
}

TEST(SelectionTest, MinMaxVariantsUseKnownRange) {
  // Sigmoid [0, 1]: PoT threshold 1, unsigned.
  HistogramSearchOptions o;
  auto t = PowerOfTwoNoClippingSelectionMinMax(0, 1, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->threshold, 1.0);
}

TEST(SelectionTest, RejectsNaNWeights) {
  const std::vector<float> w = {NAN, 1};
  auto t = SymmetricSelectionTensor(TensorView{w, {2}}, WeightsSearchOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("NaN"));
}

TEST(SelectionTest, RejectsMalformedHistogram) {
  Histogram h{{0, 1}, {1, 2}, false};
  auto t = SymmetricSelectionHistogram(h, HistogramSearchOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("edges"));
}

TEST(QuantizerTest, SymmetricIntsAreSigned) {
  // T=1, 8 bit signed: 0.5 -> 64 steps of 1/128; -1 -> -128; 1 clamps to 127.
  const std::vector<float> x = {0.5f, -1, 1};
  auto q = QuantizeSymmetric(TensorView{x, {3}}, std::vector<double>{1.0}, 0, 8,
                             true);
  ASSERT_TRUE(q.ok());
  EXPECT_THAT(q->ints, ElementsAre(64, -128, 127));
  EXPECT_THAT(q->values, ElementsAre(0.5f, -1, 127.0f / 128));
  EXPECT_THAT(q->scales, ElementsAre(1.0 / 128));
}

TEST(QuantizerTest, UniformZeroPoint) {
  // [-1, 2], 2 bits: scale 1, zero point 1; 0 -> level 1, 2 -> level 3.
  const std::vector<float> x = {0, 2};
  auto q = QuantizeUniform(TensorView{x, {2}}, std::vector<double>{-1},
                           std::vector<double>{2}, 0, 2);
  ASSERT_TRUE(q.ok());
  EXPECT_THAT(q->ints, ElementsAre(1, 3));
  EXPECT_THAT(q->zero_points, ElementsAre(1));
}

TEST(QuantizerTest, LutPicksNearestCenter) {
  // T=1: x_int = x * 128 (clipped): 0.5 -> 64 (nearest 60), -0.1 -> -12.8
  // (nearest 0); value = center / 128.
  const std::vector<float> x = {0.5f, -0.1f};
  auto q = QuantizeLut(TensorView{x, {2}}, std::vector<double>{-100, 0, 60},
                       std::vector<double>{1.0}, 0);
  ASSERT_TRUE(q.ok());
  EXPECT_THAT(q->ints, ElementsAre(2, 1));
  EXPECT_THAT(q->values, ElementsAre(60.0f / 128, 0));
}

TEST(KMeansTest, SeparatesTwoClusters) {
  auto c = WeightedKMeans1D(std::vector<double>{0, 0, 10, 10},
                            std::vector<double>{1, 1, 1, 1}, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(*c, ElementsAre(0, 10));
}

TEST(KMeansTest, WeightsPullCenters) {
  // One cluster: weighted mean (0*1 + 10*3)/4 = 7.5.
  auto c = WeightedKMeans1D(std::vector<double>{0, 10},
                            std::vector<double>{1, 3}, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(*c, ElementsAre(7.5));
}

TEST(LutKmeansTest, TensorLutHasZeroAndFewerValuesForFewUniques) {
  // Two distinct weights -> k = 2 < 4 centers; 0 is prepended if missing and
  // the nearest center becomes 0.
  const std::vector<float> w = {-1, -1, 1, 1};
  WeightsSearchOptions o;
  o.n_bits = 2;
  o.per_channel = false;
  auto p = LutKmeansTensor(TensorView{w, {4}}, o, /*is_symmetric=*/false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(std::count(p->lut_values.begin(), p->lut_values.end(), 0.0), 1);
  EXPECT_EQ(p->lut_values.size(), 3u);
}

TEST(SignednessTest, TpcForcedThenBoundedThenHistogram) {
  Histogram h{{-1, 0, 1}, {1, 1}, false};
  EXPECT_FALSE(DetermineActivationSignedness(Signedness::kUnsigned, -1.0, &h));
  EXPECT_FALSE(DetermineActivationSignedness(Signedness::kAuto, 0.0, &h));
  EXPECT_TRUE(
      DetermineActivationSignedness(Signedness::kAuto, std::nullopt, &h));
}

// The searches' fused MSE (AVX2 where the CPU has it) against the two-pass
// reference it replaced, PointwiseError(kMse, x, QuantizeRow(x)): equal bit
// for bit, on rows with ties, values outside the grid, huge values, NaN and
// infinities, every length mod 4 and lengths past NumPy's 128-value pairwise
// blocks.
TEST(QuantizedMseTest, EqualsTheTwoPassReferenceBitForBit) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double specials[] = {0.5,
                             -0.5,
                             1.5,
                             -2.5,
                             1e300,
                             -1e300,
                             -0.0,
                             std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = trial < 100 ? 1 + trial % 37 : 120 + (trial - 100) * 29;
    std::vector<double> x(n);
    for (double& v : x) {
      v = normal(rng) * (trial % 5 == 0 ? 1e6 : 1.0);
      if (rng() % 7 == 0) v = specials[rng() % 10];
    }
    const double t = 0.25 + (trial % 9);
    const auto g =
        internal::SymmetricGrid<double, double>(t, 2 + trial % 7, true);
    std::vector<double> q(n), scratch;
    internal::QuantizeRow(x.data(), n, g, q.data());
    const double want = internal::PointwiseError<double>(
        ErrorMethod::kMse, x.data(), q.data(), n, 2.0, nullptr, &scratch);
    const double got = internal::QuantizedMse(x.data(), n, g);
    const double scalar = internal::QuantizedMseScalar(x.data(), n, g);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof(double)), 0)
        << "trial " << trial << ": " << got << " vs " << want;
    EXPECT_EQ(std::memcmp(&scalar, &want, sizeof(double)), 0)
        << "trial " << trial;
  }
}

// Row {-4, 0, 4}, T=1, 8 bit signed: grid [-1, 1 - 1/128], step 1/128.
// -4 clips to -1 (error 3^2 = 9), 4 to 127/128 (error (4 - 127/128)^2 =
// 9.0470...), 0 is on the grid: MSE = 18.0470/3 = 6.0157. The clipped
// values alone prove it above 6.0 but not above 6.02 or 7.
TEST(QuantizedMseExceedsTest, ClippedValuesAloneProveTheLossAbove) {
  const std::vector<double> x = {-4, 0, 4};
  const auto g = internal::SymmetricGrid<double, double>(1.0, 8, true);
  ASSERT_NEAR(internal::QuantizedMse(x.data(), 3, g),
              (9 + (4 - 127.0 / 128) * (4 - 127.0 / 128)) / 3, 1e-12);
  const std::vector<double> e = internal::RowExtremes(x.data(), 3, 16);
  EXPECT_TRUE(internal::QuantizedMseExceeds(e.data(), 3, 3, g, 6.0));
  EXPECT_FALSE(internal::QuantizedMseExceeds(e.data(), 3, 3, g, 6.02));
  EXPECT_FALSE(internal::QuantizedMseExceeds(e.data(), 3, 3, g, 7.0));
  // T=8 clips nothing: nothing to prove with.
  const auto wide = internal::SymmetricGrid<double, double>(8.0, 8, true);
  EXPECT_FALSE(internal::QuantizedMseExceeds(e.data(), 3, 3, wide, 1e-9));
}

// Never claims a loss above what QuantizedMse returns, even when every value
// is clipped (the subset is the whole row) and the loss asked about is the
// MSE itself or a few ulps below it; rows of 1-2,000 values with outliers,
// from their 16 extremes at each end.
TEST(QuantizedMseExceedsTest, NeverProvesALossTheMseDoesNotExceed) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  int proved = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t n = 1 + (trial * 37) % 2000;
    std::vector<double> x(n);
    for (double& v : x) v = normal(rng) * (rng() % 50 == 0 ? 20.0 : 1.0);
    const std::vector<double> e = internal::RowExtremes(x.data(), n, 16);
    const int64_t m = static_cast<int64_t>(e.size());
    for (double t : {1e-3, 0.05, 0.5, 1.0, 2.5, 6.0}) {
      const auto g =
          internal::SymmetricGrid<double, double>(t, 2 + trial % 7, true);
      const double mse = internal::QuantizedMse(x.data(), n, g);
      double below = mse;
      for (int k = 0; k < 4; ++k) below = std::nextafter(below, 0.0);
      for (double loss : {mse, below, mse * 0.999, mse * 0.5}) {
        const bool p = internal::QuantizedMseExceeds(e.data(), m, n, g, loss);
        proved += p;
        if (p) {
          EXPECT_GT(mse, loss) << "trial " << trial << " t " << t;
        }
      }
      EXPECT_FALSE(internal::QuantizedMseExceeds(e.data(), m, n, g, mse))
          << "trial " << trial << " t " << t;
    }
  }
  EXPECT_GT(proved, 400);  // it does prove: the test is not vacuous
}

// RowExtremes is the 16 smallest then the 16 largest of the sorted row, on
// rows in random, ascending and descending order, with many ties, of 1 to
// 300 values (the whole row sorted up to 32).
TEST(RowExtremesTest, EqualsTheEndsOfTheSortedRow) {
  std::mt19937 rng(13);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t n = 1 + (trial * 41) % 300;
    std::vector<double> x(n);
    for (double& v : x) {
      v = trial % 3 == 0 ? static_cast<double>(rng() % 4) : normal(rng);
    }
    if (trial % 5 == 1) std::sort(x.begin(), x.end());
    if (trial % 5 == 2) std::sort(x.rbegin(), x.rend());
    std::vector<double> sorted = x;
    std::sort(sorted.begin(), sorted.end());
    std::vector<double> want = sorted;
    if (n > 32) {
      want.assign(sorted.begin(), sorted.begin() + 16);
      want.insert(want.end(), sorted.end() - 16, sorted.end());
    }
    EXPECT_EQ(internal::RowExtremes(x.data(), n, 16), want)
        << "trial " << trial << ", n " << n;
  }
}

// The per-channel search with the pruning returns the thresholds of MCT's
// loop bit for bit, and evaluates fewer losses: rows with outliers, rows of
// few distinct values (equal losses: the first candidate must win the tie),
// an all-zero row, one- and nine-value rows.
TEST(SymmetricSearchTest, PruningKeepsEveryThresholdBitForBit) {
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t cols = trial % 4 == 0 ? 9 : (trial % 4 == 1 ? 1 : 300);
    const int64_t channels = 24;
    std::vector<double> x(channels * cols);
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < cols; ++i) {
        double v = normal(rng) * (rng() % 40 == 0 ? 10.0 : 1.0);
        if (c % 3 == 1) v = static_cast<double>(rng() % 3) - 1;  // ties
        if (c == 2) v = 0;
        x[c * cols + i] = v;
      }
    }
    const int n_bits = 2 + trial % 7;
    std::vector<double> x0(channels);
    std::vector<std::vector<double>> extremes(channels);
    for (int64_t c = 0; c < channels; ++c) {
      double mx = 0;
      for (int64_t i = 0; i < cols; ++i)
        mx = std::max(mx, std::fabs(x[c * cols + i]));
      x0[c] = std::max(mx, 1e-8);
      extremes[c] = internal::RowExtremes(x.data() + c * cols, cols, 16);
    }
    int64_t calls = 0;
    auto loss = [&](int64_t c, double t, bool) {
      ++calls;
      return internal::QuantizedMse(
          x.data() + c * cols, cols,
          internal::SymmetricGrid<double, double>(t, n_bits, true));
    };
    internal::ChannelPruning exceeds;
    exceeds.exceeds = [&](int64_t c, double t, double l) {
      return internal::QuantizedMseExceeds(
          extremes[c].data(), static_cast<int64_t>(extremes[c].size()), cols,
          internal::SymmetricGrid<double, double>(t, n_bits, true), l);
    };
    const std::vector<double> want = internal::SymmetricMinimizePerChannel(
        x0, false, loss, 30, 15, 3, nullptr);
    const int64_t all_calls = calls;
    calls = 0;
    const std::vector<double> got = internal::SymmetricMinimizePerChannel(
        x0, false, loss, 30, 15, 3, nullptr, exceeds);
    ASSERT_EQ(got.size(), want.size());
    for (int64_t c = 0; c < channels; ++c) {
      EXPECT_EQ(std::memcmp(&got[c], &want[c], sizeof(double)), 0)
          << "trial " << trial << " channel " << c << ": " << got[c] << " vs "
          << want[c];
    }
    if (cols > 1) {
      EXPECT_LT(calls, all_calls) << "trial " << trial;
    }
    // The same loop fused over a channel's candidates (PrunedMseArgMin).
    internal::ChannelPruning fused;
    fused.argmin = [&](int64_t c, const std::vector<double>& cands, double* l) {
      return internal::PrunedMseArgMin(
          x.data() + c * cols, cols, extremes[c].data(),
          static_cast<int64_t>(extremes[c].size()), cands.data(),
          static_cast<int>(cands.size()), n_bits, l);
    };
    const std::vector<double> fused_got = internal::SymmetricMinimizePerChannel(
        x0, false, loss, 30, 15, 3, nullptr, fused);
    ASSERT_EQ(fused_got.size(), want.size());
    for (int64_t c = 0; c < channels; ++c) {
      EXPECT_EQ(std::memcmp(&fused_got[c], &want[c], sizeof(double)), 0)
          << "fused, trial " << trial << " channel " << c << ": "
          << fused_got[c] << " vs " << want[c];
    }
  }
}

// SymmetricGrids (four thresholds per vector) is SymmetricGrid bit for bit:
// ordinary, tiny, subnormal, zero (both signs), huge and negative
// thresholds, infinities and NaN, 1 to 30 bits, a count that leaves a tail.
TEST(SymmetricGridsTest, EqualsSymmetricGridBitForBit) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> t = {1.0,    0.1,  3e-5, 0.7 * 0.05,   1e-300,
                                 5e-324, 0.0,  -0.0, 1e300,        1.7e308,
                                 inf,    -2.5, 2.0,  std::nan(""), 1.0 / 3};
  const auto same = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) ||
           std::memcmp(&a, &b, sizeof(double)) == 0;
  };
  for (int bits = 1; bits <= 30; ++bits) {
    std::vector<internal::Grid<double>> got(t.size());
    internal::SymmetricGrids(t.data(), static_cast<int64_t>(t.size()), bits,
                             got.data());
    for (size_t i = 0; i < t.size(); ++i) {
      const auto want =
          internal::SymmetricGrid<double, double>(t[i], bits, true);
      EXPECT_TRUE(same(got[i].lo, want.lo) && same(got[i].hi, want.hi) &&
                  same(got[i].delta, want.delta))
          << bits << " bits, T=" << t[i] << ": [" << got[i].lo << ", "
          << got[i].hi << "] step " << got[i].delta << " vs [" << want.lo
          << ", " << want.hi << "] step " << want.delta;
    }
  }
}

// A loss with plateaus (equal losses over runs of candidates): MCT keeps the
// first candidate of least loss, and so does the pruned search, which visits
// them from the last; `exceeds` here knows the loss exactly.
TEST(SymmetricSearchTest, TiesGoToTheFirstCandidate) {
  const std::vector<double> x0 = {1.0, 3.0, 0.5};
  auto loss = [](int64_t c, double t, bool) {
    return 1 + std::floor(std::fabs(t - 0.8 * (c + 1)) * 8) / 8;
  };
  internal::ChannelPruning exceeds;
  exceeds.exceeds = [&](int64_t c, double t, double l) {
    return loss(c, t, false) > l;
  };
  const std::vector<double> want = internal::SymmetricMinimizePerChannel(
      x0, false, loss, 30, 15, 3, nullptr);
  const std::vector<double> got = internal::SymmetricMinimizePerChannel(
      x0, false, loss, 30, 15, 3, nullptr, exceeds);
  ASSERT_EQ(got.size(), 3u);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NE(want[c], x0[c]) << "channel " << c;  // the search moved
    EXPECT_EQ(std::memcmp(&got[c], &want[c], sizeof(double)), 0)
        << "channel " << c << ": " << got[c] << " vs " << want[c];
  }
}

// A loss that is not finite (NaN here) takes MCT's loop, whose blend keeps
// the NaN: the result is the same with and without the pruning.
TEST(SymmetricSearchTest, NonFiniteLossFallsBackToMctsLoop) {
  const std::vector<double> x0 = {1.0, 2.0};
  auto loss = [](int64_t c, double t, bool) {
    if (c == 1 && t > 1.9 && t < 2.0) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return (t - 0.9 * (c + 1)) * (t - 0.9 * (c + 1));
  };
  internal::ChannelPruning exceeds;
  exceeds.exceeds = [](int64_t, double, double) { return false; };
  const std::vector<double> want = internal::SymmetricMinimizePerChannel(
      x0, false, loss, 30, 15, 3, nullptr);
  const std::vector<double> got = internal::SymmetricMinimizePerChannel(
      x0, false, loss, 30, 15, 3, nullptr, exceeds);
  ASSERT_EQ(got.size(), 2u);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(std::memcmp(&got[c], &want[c], sizeof(double)), 0)
        << "channel " << c << ": " << got[c] << " vs " << want[c];
  }
}

// The KL weight search's histogram of a tensor whose range overflows float32
// (or holds an infinity) stays inside its bins (it read out of bounds): every
// finite value is counted once.
TEST(HistogramF32Test, RangeWiderThanFloat32StaysInsideTheBins) {
  const float big = 3e38f;
  for (const std::vector<float>& x :
       {std::vector<float>{-big, 0.0f, big},
        std::vector<float>{1.0f, std::numeric_limits<float>::infinity(), 2.0f},
        std::vector<float>{-std::numeric_limits<float>::infinity(), 1.0f}}) {
    std::vector<double> edges, counts;
    internal::HistogramF32(x.data(), static_cast<int64_t>(x.size()), 2048,
                           &edges, &counts);
    ASSERT_EQ(counts.size(), 2048u);
    double total = 0, finite = 0;
    for (double c : counts) total += c;
    for (float v : x) finite += std::isfinite(v) ? 1 : 0;
    EXPECT_GE(total, finite);
    EXPECT_LE(total, static_cast<double>(x.size()));
  }
}

}  // namespace
}  // namespace quantd::quantizers
