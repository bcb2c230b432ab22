#include "core/mixed_precision/sensitivity_metric.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::mixed_precision {
namespace {

TEST(SensitivityMetric, NormalizedMseHandDerived) {
  // f = (1, 2, 3, 4), q = (1, 2, 3, 2): mean err^2 = 4/4 = 1,
  // mean f^2 = 30/4 = 7.5 -> 1 / (7.5 + 1e-8).
  const float f[] = {1, 2, 3, 4}, q[] = {1, 2, 3, 2};
  auto d = NormalizedMse(f, q);
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(*d, 1.0 / (7.5 + 1e-8));
}

TEST(SensitivityMetric, NormalizedMseOfZeroSignalUsesEpsilon) {
  // f = 0, q = (1, 1): mean err^2 = 1, mean f^2 = 0 -> 1 / 1e-8.
  const float f[] = {0, 0}, q[] = {1, 1};
  EXPECT_DOUBLE_EQ(*NormalizedMse(f, q), 1e8);
}

TEST(SensitivityMetric, KlHandDerived) {
  // p = (0.5, 0.5), q = (0.25, 0.75):
  // 0.5 ln 2 + 0.5 ln(2/3).
  const float p[] = {0.5f, 0.5f}, q[] = {0.25f, 0.75f};
  EXPECT_NEAR(*KlDivergence(p, q),
              0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0), 1e-12);
}

TEST(SensitivityMetric, KlClipsZeroProbabilities) {
  // p = (1, 0), q = (0, 1): 1 * ln(1 / 1e-8) + 1e-8 * ln(1e-8 / 1).
  const float p[] = {1, 0}, q[] = {0, 1};
  EXPECT_NEAR(*KlDivergence(p, q), std::log(1e8) + 1e-8 * std::log(1e-8), 1e-9);
}

TEST(SensitivityMetric, CosineHandDerived) {
  // f = (1, 0), q = (1, 1): cs = 1/sqrt(2) -> (1 - 0.70710678) / 2.
  const float f[] = {1, 0}, q[] = {1, 1};
  EXPECT_NEAR(*CosineDistance(f, q), (1.0 - 1.0 / std::sqrt(2.0)) / 2.0, 1e-12);
  // Opposite vectors -> 1; identical -> 0.
  const float a[] = {1, -2}, b[] = {-1, 2};
  EXPECT_NEAR(*CosineDistance(a, b), 1.0, 1e-12);
  EXPECT_NEAR(*CosineDistance(a, a), 0.0, 1e-12);
}

TEST(SensitivityMetric, RejectsMismatchedSizesAndNonFinite) {
  const float f[] = {1, 2}, q[] = {1};
  EXPECT_EQ(NormalizedMse(f, q).status().code(),
            absl::StatusCode::kInvalidArgument);
  const float g[] = {1, NAN};
  EXPECT_THAT(CosineDistance(f, g).status().message(),
              ::testing::HasSubstr("non-finite value at element 1"));
}

TEST(SensitivityMetric, MetricEpsilonLiftsLowerBitCandidates) {
  // Max-bit candidate 0 has 0.5: others become >= 0.5 + 1e-6.
  const double metric[] = {0.5, 0.2, 0.9};
  EXPECT_THAT(ApplyMetricEpsilon(metric, 0),
              ::testing::ElementsAre(0.5, 0.5 + 1e-6, 0.9));
}

}  // namespace
}  // namespace quantd::mixed_precision
