#include "core/mixed_precision/distance_weighting.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace quantd::mixed_precision {
namespace {

absl::StatusOr<std::vector<double>> MeanPerPoint(
    absl::Span<const double> distances, size_t num_points, size_t num_samples) {
  if (num_samples == 0) {
    return absl::InvalidArgumentError("distance matrix: no samples");
  }
  if (num_points == 0 || distances.size() / num_samples != num_points ||
      distances.size() % num_samples != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("distance matrix: ", distances.size(), " values for ",
                     num_points, " points x ", num_samples, " samples"));
  }
  std::vector<double> mean(num_points, 0.0);
  for (size_t p = 0; p < num_points; ++p) {
    double sum = 0;
    for (size_t s = 0; s < num_samples; ++s) {
      const double d = distances[p * num_samples + s];
      if (!std::isfinite(d) || d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("distance matrix: point ", p, " sample ", s, " is ", d,
                         ", expected a finite value >= 0"));
      }
      sum += d;
    }
    mean[p] = sum / static_cast<double>(num_samples);
  }
  return mean;
}

double WeightedAverage(const std::vector<double>& values,
                       absl::Span<const double> weights) {
  double num = 0, den = 0;
  for (size_t p = 0; p < values.size(); ++p) {
    num += weights[p] * values[p];
    den += weights[p];
  }
  return den > 0 ? num / den : 0.0;
}

}  // namespace

absl::StatusOr<double> AggregateDistances(absl::Span<const double> distances,
                                          size_t num_points, size_t num_samples,
                                          const WeightingOptions& options) {
  absl::StatusOr<std::vector<double>> mean =
      MeanPerPoint(distances, num_points, num_samples);
  if (!mean.ok()) return mean.status();
  switch (options.method) {
    case DistanceWeighting::kAvg: {
      double sum = 0;
      for (double d : *mean) sum += d;
      return sum / static_cast<double>(num_points);
    }
    case DistanceWeighting::kLastLayer:
      return mean->back();
    case DistanceWeighting::kExp: {
      if (!(options.exp_sigma > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("exp_sigma = ", options.exp_sigma, ", expected > 0"));
      }
      std::vector<double> weights(num_points);
      for (size_t p = 0; p < num_points; ++p) {
        weights[p] = 1.0 - std::exp(-(*mean)[p] / options.exp_sigma);
      }
      return WeightedAverage(*mean, weights);
    }
    case DistanceWeighting::kPrecomputed: {
      if (options.point_weights.size() != num_points) {
        return absl::InvalidArgumentError(
            absl::StrCat("point_weights: ", options.point_weights.size(),
                         " weights for ", num_points, " points"));
      }
      double total = 0;
      for (size_t p = 0; p < num_points; ++p) {
        const double w = options.point_weights[p];
        if (!std::isfinite(w) || w < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "point_weights[", p, "] = ", w, ", expected finite >= 0"));
        }
        total += w;
      }
      if (total <= 0) {
        return absl::InvalidArgumentError("point_weights sum to zero");
      }
      return WeightedAverage(*mean, options.point_weights);
    }
  }
  return absl::InvalidArgumentError("unknown distance weighting method");
}

absl::StatusOr<double> SensitivityMetric(
    absl::Span<const double> point_distances, size_t num_points,
    absl::Span<const double> output_distances, size_t num_outputs,
    size_t num_samples, const WeightingOptions& options) {
  absl::StatusOr<double> points =
      AggregateDistances(point_distances, num_points, num_samples, options);
  if (!points.ok()) return points.status();
  if (num_outputs == 0) {
    if (!output_distances.empty()) {
      return absl::InvalidArgumentError(
          "output distances given for zero outputs");
    }
    return *points;
  }
  absl::StatusOr<double> outputs =
      AggregateDistances(output_distances, num_outputs, num_samples,
                         WeightingOptions{DistanceWeighting::kAvg});
  if (!outputs.ok()) return outputs.status();
  return *points + *outputs;
}

}  // namespace quantd::mixed_precision
