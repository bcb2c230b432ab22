// Weighted 1-D k-means (k-means++ seeding, Lloyd iterations, best of n_init
// runs by inertia), deterministic for a given seed: the clustering behind
// MCT's LUT quantizers (which call sklearn's KMeans on one feature).
#ifndef QUANTD_CORE_QUANTIZERS_KMEANS_H_
#define QUANTD_CORE_QUANTIZERS_KMEANS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace quantd::quantizers {

struct KMeansOptions {
  uint64_t seed = 0;
  int n_init = 10;
  int max_iter = 300;
  double tol = 1e-4;  // relative to the data variance, as sklearn
};

// Centers (k of them, in no particular order) minimising the weighted sum of
// squared distances. Points with weight 0 do not pull centers. Requires
// 1 <= k and at least k distinct points with positive weight... fewer give
// duplicate centers.
absl::StatusOr<std::vector<double>> WeightedKMeans1D(
    absl::Span<const double> points, absl::Span<const double> weights, int k,
    const KMeansOptions& options = {});

// Every candidate solution: the n_init k-means++/Lloyd runs in seed order,
// then the exact optimum of the 1-D problem (dynamic programming over the
// sorted points). Callers that post-process centers (rounding, forcing a
// zero) pick the candidate that is best after post-processing.
absl::StatusOr<std::vector<std::vector<double>>> KMeansCandidates1D(
    absl::Span<const double> points, absl::Span<const double> weights, int k,
    const KMeansOptions& options = {});

// sum_i w_i * min_c (x_i - c)^2.
double KMeansObjective(absl::Span<const double> points,
                       absl::Span<const double> weights,
                       absl::Span<const double> centers);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_KMEANS_H_
