// The last step of the distances of sensitivity_metric.h, from their sums:
// shared by the one-sample functions and the sample lanes of
// distance_lanes.h, so both give the same value from the same sums.
#ifndef QUANTD_CORE_MIXED_PRECISION_INTERNAL_DISTANCE_SUMS_H_
#define QUANTD_CORE_MIXED_PRECISION_INTERNAL_DISTANCE_SUMS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace quantd::mixed_precision::internal {

inline constexpr double kDistanceEps = 1e-8;

// mean((f-q)^2) / (mean(f^2) + 1e-8) from sum (f-q)^2 and sum f^2.
inline double NormalizedMseFromSums(double squared_error, double squared_norm,
                                    size_t count) {
  const double n = static_cast<double>(count);
  return (squared_error / n) / (squared_norm / n + kDistanceEps);
}

// (1 - cos(f, q)) / 2 from sum f*q, sum f^2 and sum q^2.
inline double CosineDistanceFromSums(double dot, double norm_f, double norm_q) {
  if (norm_f == 0 && norm_q == 0) return 0.0;
  if (norm_f == 0 || norm_q == 0) return 0.5;
  const double cs =
      std::clamp(dot / (std::sqrt(norm_f) * std::sqrt(norm_q)), -1.0, 1.0);
  return (1.0 - cs) / 2.0;
}

}  // namespace quantd::mixed_precision::internal

#endif  // QUANTD_CORE_MIXED_PRECISION_INTERNAL_DISTANCE_SUMS_H_
