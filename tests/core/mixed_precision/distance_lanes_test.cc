// The sample lanes against the one-sample distances (the reference
// implementation): equal bit for bit, errors included.
#include "core/mixed_precision/distance_lanes.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/mixed_precision/sensitivity_metric.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::mixed_precision {
namespace {

using Spans = std::vector<absl::Span<const float>>;

struct Batch {
  std::vector<std::vector<float>> f, q;
  Spans fs, qs;
  std::vector<FloatSideSums> side;
};

// `sizes[s]` elements per sample; q = f plus noise of a varying scale, so
// the sums cover several magnitudes.
Batch RandomBatch(const std::vector<size_t>& sizes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Batch b;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<float> f(sizes[s]), q(sizes[s]);
    const float scale = std::pow(10.0f, static_cast<float>(s % 5) - 3.0f);
    for (size_t i = 0; i < f.size(); ++i) {
      f[i] = 100.0f * normal(rng);
      q[i] = f[i] + scale * normal(rng);
    }
    b.f.push_back(std::move(f));
    b.q.push_back(std::move(q));
  }
  for (size_t s = 0; s < sizes.size(); ++s) {
    b.fs.emplace_back(b.f[s]);
    b.qs.emplace_back(b.q[s]);
    b.side.push_back(SumFloatSide(b.fs.back()));
  }
  return b;
}

// Bit-identical: EXPECT_EQ on doubles, no tolerance.
void ExpectEqualsOneSample(LaneDistance kind, const Batch& b) {
  std::vector<double> out(b.fs.size(), -1);
  ASSERT_TRUE(
      DistancesOverSamples(kind, b.fs, b.qs, b.side, absl::MakeSpan(out)).ok());
  for (size_t s = 0; s < b.fs.size(); ++s) {
    auto want = kind == LaneDistance::kCosine ? CosineDistance(b.fs[s], b.qs[s])
                                              : NormalizedMse(b.fs[s], b.qs[s]);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(out[s], *want) << "sample " << s << " of " << b.fs.size();
  }
}

TEST(DistanceLanes, NormalizedMseEqualsOneSampleBitForBit) {
  // 1..9 samples (full and partial lane groups), lengths with tails of 0..3.
  for (size_t samples = 1; samples <= 9; ++samples) {
    for (size_t n : {1, 3, 4, 7, 64, 1001}) {
      ExpectEqualsOneSample(LaneDistance::kNormalizedMse,
                            RandomBatch(std::vector<size_t>(samples, n),
                                        static_cast<uint32_t>(samples * n)));
    }
  }
}

TEST(DistanceLanes, CosineEqualsOneSampleBitForBit) {
  for (size_t samples = 1; samples <= 9; ++samples) {
    for (size_t n : {1, 2, 5, 8, 333}) {
      ExpectEqualsOneSample(
          LaneDistance::kCosine,
          RandomBatch(std::vector<size_t>(samples, n),
                      static_cast<uint32_t>(7 * samples + n)));
    }
  }
}

TEST(DistanceLanes, SamplesOfDifferentLengthsEqualOneSample) {
  ExpectEqualsOneSample(LaneDistance::kNormalizedMse,
                        RandomBatch({5, 5, 9, 9, 9, 9, 9, 2}, 11));
  ExpectEqualsOneSample(LaneDistance::kCosine,
                        RandomBatch({5, 5, 9, 9, 9, 9, 9, 2}, 12));
}

TEST(DistanceLanes, HandDerivedNormalizedMse) {
  // Sample 0: f = (1, 2, 3, 4), q = (1, 2, 3, 2): 1 / (7.5 + 1e-8).
  // Sample 1: f = (2, 0, 0, 0), q = (0, 0, 0, 0): mean err^2 = 1,
  // mean f^2 = 1 -> 1 / (1 + 1e-8).
  const std::vector<float> f0 = {1, 2, 3, 4}, q0 = {1, 2, 3, 2};
  const std::vector<float> f1 = {2, 0, 0, 0}, q1 = {0, 0, 0, 0};
  const Spans f = {f0, f1}, q = {q0, q1};
  const std::vector<FloatSideSums> side = {SumFloatSide(f0), SumFloatSide(f1)};
  EXPECT_EQ(side[0].squared_norm, 30.0);
  std::vector<double> out(2);
  ASSERT_TRUE(DistancesOverSamples(LaneDistance::kNormalizedMse, f, q, side,
                                   absl::MakeSpan(out))
                  .ok());
  EXPECT_DOUBLE_EQ(out[0], 1.0 / (7.5 + 1e-8));
  EXPECT_DOUBLE_EQ(out[1], 1.0 / (1.0 + 1e-8));
}

TEST(DistanceLanes, CosineOfZeroVectors) {
  // Both zero -> 0; one zero -> 0.5 (CosineDistance's rules).
  const std::vector<float> z = {0, 0, 0}, one = {1, 0, 0};
  const Spans f = {z, z, one}, q = {z, one, z};
  const std::vector<FloatSideSums> side = {SumFloatSide(z), SumFloatSide(z),
                                           SumFloatSide(one)};
  std::vector<double> out(3);
  ASSERT_TRUE(DistancesOverSamples(LaneDistance::kCosine, f, q, side,
                                   absl::MakeSpan(out))
                  .ok());
  EXPECT_THAT(out, ::testing::ElementsAre(0.0, 0.5, 0.5));
}

TEST(DistanceLanes, NonFiniteQuantizedValueGivesTheOneSampleError) {
  Batch b = RandomBatch({6, 6, 6, 6, 6}, 3);
  b.q[3][4] = INFINITY;
  b.q[4][1] = NAN;
  std::vector<double> out(5);
  absl::Status st = DistancesOverSamples(LaneDistance::kNormalizedMse, b.fs,
                                         b.qs, b.side, absl::MakeSpan(out));
  // The first failing sample (3) names its element.
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), NormalizedMse(b.fs[3], b.qs[3]).status().message());
  EXPECT_THAT(st.message(), ::testing::HasSubstr("element 4"));
}

TEST(DistanceLanes, NonFiniteFloatValueIsCaughtBySumFloatSide) {
  const std::vector<float> f = {1, NAN, 2};
  EXPECT_FALSE(SumFloatSide(f).finite);
  const std::vector<float> q = {1, 1, 2};
  std::vector<double> out(1);
  absl::Status st =
      DistancesOverSamples(LaneDistance::kCosine, Spans{f}, Spans{q},
                           {SumFloatSide(f)}, absl::MakeSpan(out));
  EXPECT_THAT(st.message(),
              ::testing::HasSubstr("non-finite value at element 1"));
}

TEST(DistanceLanes, MismatchedSizesAreRejected) {
  const std::vector<float> f = {1, 2}, q = {1};
  std::vector<double> out(1);
  EXPECT_EQ(
      DistancesOverSamples(LaneDistance::kNormalizedMse, Spans{f}, Spans{q},
                           {SumFloatSide(f)}, absl::MakeSpan(out))
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace quantd::mixed_precision
