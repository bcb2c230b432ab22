// MCT's aggregation of per-interest-point distances into one sensitivity
// value (MpDistanceWeighting). The distance matrix is row-major
// [num_points x num_samples]; each point's distance is first averaged over
// samples, then the points are combined:
//   AVG         mean over points (MCT's default),
//   LAST_LAYER  the last point,
//   EXP         weights w_p = 1 - exp(-d_p / sigma), sum(w d) / sum(w)
//               (0 when every d_p is 0),
//   PRECOMPUTED weights given by the caller (Hessian trace scores),
//               sum(w d) / sum(w).
// The final metric adds the mean distance of the graph outputs (AVG).
#ifndef QUANTD_CORE_MIXED_PRECISION_DISTANCE_WEIGHTING_H_
#define QUANTD_CORE_MIXED_PRECISION_DISTANCE_WEIGHTING_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace quantd::mixed_precision {

enum class DistanceWeighting { kAvg, kLastLayer, kExp, kPrecomputed };

struct WeightingOptions {
  DistanceWeighting method = DistanceWeighting::kAvg;
  // MCT's exp_distance_weighting_sigma.
  double exp_sigma = 0.1;
  // One weight >= 0 per point for kPrecomputed.
  absl::Span<const double> point_weights;
};

// Aggregates a [num_points x num_samples] matrix into one value.
absl::StatusOr<double> AggregateDistances(absl::Span<const double> distances,
                                          size_t num_points, size_t num_samples,
                                          const WeightingOptions& options);

// Interest points aggregated with `options` plus the mean over the output
// matrix [num_outputs x num_samples] (MCT: ipts_metric + mean(out_dists)).
// num_outputs may be 0.
absl::StatusOr<double> SensitivityMetric(
    absl::Span<const double> point_distances, size_t num_points,
    absl::Span<const double> output_distances, size_t num_outputs,
    size_t num_samples, const WeightingOptions& options);

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_DISTANCE_WEIGHTING_H_
