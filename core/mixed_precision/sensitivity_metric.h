// Per-interest-point distance functions of MCT's mixed-precision sensitivity
// (get_mp_node_distance_fn): each compares one sample's float output f with
// its quantized output q. Pure functions over float spans; results in double,
// the candidate's sums in the order of internal/distance_sums.h.
#ifndef QUANTD_CORE_MIXED_PRECISION_SENSITIVITY_METRIC_H_
#define QUANTD_CORE_MIXED_PRECISION_SENSITIVITY_METRIC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace quantd::mixed_precision {

// MCT's default: mean((f-q)^2) / (mean(f^2) + 1e-8).
absl::StatusOr<double> NormalizedMse(absl::Span<const float> f,
                                     absl::Span<const float> q);

// Softmax outputs: sum p*log(p/q) over elements, both clipped to >= 1e-8 so a
// zero probability neither divides by zero nor yields log(0) (MCT's EPS).
absl::StatusOr<double> KlDivergence(absl::Span<const float> f,
                                    absl::Span<const float> q);

// Sigmoid and linear outputs: (1 - cos(f, q)) / 2, in [0, 1]. Two zero
// vectors are identical (0); one zero vector against a non-zero one is 0.5.
absl::StatusOr<double> CosineDistance(absl::Span<const float> f,
                                      absl::Span<const float> q);

// MCT's metric_epsilon rule: every candidate other than the max-bit one gets
// a metric of at least metric[max_bit_candidate] + epsilon, so that a
// lower-bit candidate is never preferred at equal distance.
std::vector<double> ApplyMetricEpsilon(absl::Span<const double> metric,
                                       int max_bit_candidate,
                                       double epsilon = 1e-6);

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_SENSITIVITY_METRIC_H_
