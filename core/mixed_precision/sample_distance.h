// The distances of sensitivity_metric.h for one sample, as the sensitivity
// evaluation needs them: every candidate of every node is compared with the
// same float outputs, so what depends on the float side alone (sum f^2,
// finiteness) is summed once per sample (SumFloatSide) and reused, and only
// the candidate's sums run per comparison, right after the candidate's
// tensor is made (while it is in cache). Every value and error is
// bit-identical to NormalizedMse / CosineDistance on the same sample: both
// take the candidate's sums from internal/distance_sums.h.
#ifndef QUANTD_CORE_MIXED_PRECISION_SAMPLE_DISTANCE_H_
#define QUANTD_CORE_MIXED_PRECISION_SAMPLE_DISTANCE_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace quantd::mixed_precision {

// What every candidate's distance needs from one float output.
struct FloatSideSums {
  double squared_norm = 0;  // sum of f^2 in element order
  bool finite = true;       // no NaN or Inf in f
};

FloatSideSums SumFloatSide(absl::Span<const float> f);

enum class SampleDistance { kNormalizedMse, kCosine };

// NormalizedMse(f, q) (kCosine: CosineDistance(f, q)), given float_side =
// SumFloatSide(f): the same value, or the same error.
absl::StatusOr<double> DistanceToFloat(SampleDistance kind,
                                       absl::Span<const float> f,
                                       absl::Span<const float> q,
                                       const FloatSideSums& float_side);

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_SAMPLE_DISTANCE_H_
