// DistanceToFloat against the one-sample distances (equal bit for bit,
// errors included), and the candidate's sums, on the fastest path and the
// portable one, against a transcription of the order
// internal/distance_sums.h documents and against an exact sum.
#include "core/mixed_precision/sample_distance.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/mixed_precision/internal/distance_sums.h"
#include "core/mixed_precision/sensitivity_metric.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::mixed_precision {
namespace {

struct Pair {
  std::vector<float> f, q;
};

// q = f plus noise of scale 10^(scale_exp), so the sums cover several
// magnitudes.
Pair RandomPair(size_t n, int scale_exp, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float scale = std::pow(10.0f, static_cast<float>(scale_exp));
  Pair p{std::vector<float>(n), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    p.f[i] = 100.0f * normal(rng);
    p.q[i] = p.f[i] + scale * normal(rng);
  }
  return p;
}

// The documented order, written out: partial i % 16 for the first
// n - n % 16 elements, the partials combined, then the tail in order.
double DocumentedOrder(const std::vector<double>& terms) {
  const size_t n = terms.size(), blocked = n - n % 16;
  double s[16] = {};
  for (size_t i = 0; i < blocked; ++i) s[i % 16] += terms[i];
  double p[4];
  for (int j = 0; j < 4; ++j) p[j] = ((s[j] + s[4 + j]) + s[8 + j]) + s[12 + j];
  double total = (p[0] + p[2]) + (p[1] + p[3]);
  for (size_t i = blocked; i < n; ++i) total += terms[i];
  return total;
}

// Lengths below one block, with every tail 0..15, and long ones.
const size_t kLengths[] = {1,  3,  15, 16, 17,   31,   32,       33,
                           47, 64, 77, 90, 1001, 4099, 65536 + 7};

TEST(SampleDistance, NormalizedMseEqualsOneSampleBitForBit) {
  for (size_t n : kLengths) {
    for (int e = -3; e <= 1; ++e) {
      const Pair p = RandomPair(n, e, static_cast<uint32_t>(n * 10 + e + 3));
      auto got = DistanceToFloat(SampleDistance::kNormalizedMse, p.f, p.q,
                                 SumFloatSide(p.f));
      auto want = NormalizedMse(p.f, p.q);
      ASSERT_TRUE(got.ok() && want.ok());
      EXPECT_EQ(*got, *want) << "n " << n << " scale 1e" << e;
    }
  }
}

TEST(SampleDistance, CosineEqualsOneSampleBitForBit) {
  for (size_t n : kLengths) {
    const Pair p = RandomPair(n, -1, static_cast<uint32_t>(7 * n));
    auto got =
        DistanceToFloat(SampleDistance::kCosine, p.f, p.q, SumFloatSide(p.f));
    auto want = CosineDistance(p.f, p.q);
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(*got, *want) << "n " << n;
  }
}

TEST(SampleDistance, SumsFollowTheDocumentedOrderAndStayExact) {
  for (size_t n : kLengths) {
    const Pair p = RandomPair(n, -2, static_cast<uint32_t>(3 * n + 1));
    std::vector<double> sq(n), dot(n), qq(n);
    long double exact_sq = 0, exact_dot = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(p.f[i]) - p.q[i];
      sq[i] = d * d;
      dot[i] = static_cast<double>(p.f[i]) * p.q[i];
      qq[i] = static_cast<double>(p.q[i]) * p.q[i];
      exact_sq += static_cast<long double>(sq[i]);
      exact_dot += static_cast<long double>(dot[i]);
    }
    const auto len = static_cast<int64_t>(n);
    // The fastest path on this CPU and the portable one: the same order.
    for (auto path :
         {internal::SumPath::kFastest, internal::SumPath::kPortable}) {
      const std::string where = absl::StrCat(
          "n ", n, path == internal::SumPath::kPortable ? " (portable)" : "");
      const double got_sq =
          internal::SquaredDiffSum(p.f.data(), p.q.data(), len, path);
      double got_dot = 0, got_qq = 0;
      internal::DotAndNormSums(p.f.data(), p.q.data(), len, &got_dot, &got_qq,
                               path);
      EXPECT_EQ(got_sq, DocumentedOrder(sq)) << where;
      EXPECT_EQ(got_dot, DocumentedOrder(dot)) << where;
      EXPECT_EQ(got_qq, DocumentedOrder(qq)) << where;
      // Any order of these non-negative terms is within n ulps of the sum.
      EXPECT_NEAR(got_sq, static_cast<double>(exact_sq),
                  1e-15 * static_cast<double>(n) * got_sq);
      EXPECT_NEAR(got_dot, static_cast<double>(exact_dot),
                  1e-15 * static_cast<double>(n) * got_qq);
    }
  }
}

TEST(SampleDistance, HandDerivedNormalizedMse) {
  // f = (1, 2, 3, 4), q = (1, 2, 3, 2): mean err^2 = 1, mean f^2 = 7.5.
  const std::vector<float> f = {1, 2, 3, 4}, q = {1, 2, 3, 2};
  const FloatSideSums side = SumFloatSide(f);
  EXPECT_EQ(side.squared_norm, 30.0);
  auto d = DistanceToFloat(SampleDistance::kNormalizedMse, f, q, side);
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(*d, 1.0 / (7.5 + 1e-8));
  // 32 elements (two blocks): f = 2 at element 20, q = 0: mean err^2 =
  // mean f^2 = 4/32.
  std::vector<float> f2(32, 0.0f), q2(32, 0.0f);
  f2[20] = 2;
  d = DistanceToFloat(SampleDistance::kNormalizedMse, f2, q2, SumFloatSide(f2));
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(*d, 0.125 / (0.125 + 1e-8));
}

TEST(SampleDistance, CosineOfZeroVectors) {
  // Both zero -> 0; one zero -> 0.5 (CosineDistance's rules).
  const std::vector<float> z = {0, 0, 0}, one = {1, 0, 0};
  auto cos = [](const std::vector<float>& f, const std::vector<float>& q) {
    return *DistanceToFloat(SampleDistance::kCosine, f, q, SumFloatSide(f));
  };
  EXPECT_EQ(cos(z, z), 0.0);
  EXPECT_EQ(cos(z, one), 0.5);
  EXPECT_EQ(cos(one, z), 0.5);
}

TEST(SampleDistance, NonFiniteQuantizedValueGivesTheOneSampleError) {
  Pair p = RandomPair(40, -1, 3);
  p.q[37] = INFINITY;
  auto d = DistanceToFloat(SampleDistance::kNormalizedMse, p.f, p.q,
                           SumFloatSide(p.f));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), NormalizedMse(p.f, p.q).status().message());
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("element 37"));
  p.q[37] = NAN;
  d = DistanceToFloat(SampleDistance::kCosine, p.f, p.q, SumFloatSide(p.f));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("element 37"));
}

TEST(SampleDistance, NonFiniteFloatValueIsCaughtBySumFloatSide) {
  const std::vector<float> f = {1, NAN, 2}, q = {1, 1, 2};
  EXPECT_FALSE(SumFloatSide(f).finite);
  auto d = DistanceToFloat(SampleDistance::kCosine, f, q, SumFloatSide(f));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              ::testing::HasSubstr("non-finite value at element 1"));
}

TEST(SampleDistance, MismatchedSizesAreRejected) {
  const std::vector<float> f = {1, 2}, q = {1};
  EXPECT_EQ(
      DistanceToFloat(SampleDistance::kNormalizedMse, f, q, SumFloatSide(f))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace quantd::mixed_precision
