#include "core/mixed_precision/distance_weighting.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::mixed_precision {
namespace {

// 3 points x 2 samples; per-point means 0.1, 0.3, 0.2.
constexpr double kDistances[] = {0.0, 0.2, 0.2, 0.4, 0.1, 0.3};

TEST(DistanceWeighting, AvgIsMeanOfPointMeans) {
  // (0.1 + 0.3 + 0.2) / 3 = 0.2.
  EXPECT_NEAR(*AggregateDistances(kDistances, 3, 2, {}), 0.2, 1e-15);
}

TEST(DistanceWeighting, LastLayerTakesLastPoint) {
  WeightingOptions options{DistanceWeighting::kLastLayer};
  EXPECT_NEAR(*AggregateDistances(kDistances, 3, 2, options), 0.2, 1e-15);
}

TEST(DistanceWeighting, ExpWeightsBySigma) {
  // w = 1 - exp(-d / 0.1): 1 - e^-1, 1 - e^-3, 1 - e^-2.
  const double w0 = 1 - std::exp(-1.0), w1 = 1 - std::exp(-3.0),
               w2 = 1 - std::exp(-2.0);
  const double expected = (w0 * 0.1 + w1 * 0.3 + w2 * 0.2) / (w0 + w1 + w2);
  WeightingOptions options{DistanceWeighting::kExp, 0.1};
  EXPECT_NEAR(*AggregateDistances(kDistances, 3, 2, options), expected, 1e-12);
}

TEST(DistanceWeighting, ExpOfAllZeroDistancesIsZero) {
  const double zeros[] = {0, 0, 0, 0};
  WeightingOptions options{DistanceWeighting::kExp, 0.1};
  EXPECT_EQ(*AggregateDistances(zeros, 2, 2, options), 0.0);
}

TEST(DistanceWeighting, PrecomputedWeightsAreNormalized) {
  // Hessian scores (1, 0, 3): (0.1 + 3 * 0.2) / 4 = 0.175.
  const double weights[] = {1, 0, 3};
  WeightingOptions options{DistanceWeighting::kPrecomputed, 0.1, weights};
  EXPECT_NEAR(*AggregateDistances(kDistances, 3, 2, options), 0.175, 1e-15);
}

TEST(DistanceWeighting, SensitivityAddsMeanOutputDistance) {
  // AVG over points 0.2 + output mean (0.5 + 0.7) / 2 = 0.8.
  const double outputs[] = {0.5, 0.7};
  EXPECT_NEAR(*SensitivityMetric(kDistances, 3, outputs, 1, 2, {}), 0.8, 1e-15);
}

TEST(DistanceWeighting, RejectsShapeMismatch) {
  auto result = AggregateDistances(kDistances, 4, 2, {});
  EXPECT_THAT(result.status().message(),
              ::testing::HasSubstr("6 values for 4 points x 2 samples"));
}

TEST(DistanceWeighting, RejectsWrongNumberOfPrecomputedWeights) {
  const double weights[] = {1, 2};
  WeightingOptions options{DistanceWeighting::kPrecomputed, 0.1, weights};
  EXPECT_THAT(AggregateDistances(kDistances, 3, 2, options).status().message(),
              ::testing::HasSubstr("2 weights for 3 points"));
}

}  // namespace
}  // namespace quantd::mixed_precision
