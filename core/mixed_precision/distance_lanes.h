// The distances of sensitivity_metric.h for several samples of one interest
// point at once, as the sensitivity evaluation needs them: every candidate of
// every node is compared with the same float outputs, so what depends on the
// float side alone (sum f^2, finiteness) is summed once per sample
// (SumFloatSide) and reused; the candidate's sums run four samples at a time,
// one AVX2 lane per sample. Each lane adds its own sample's terms in element
// order with the operations of the one-sample functions (no FMA, no
// reassociation), so every value is bit-identical to NormalizedMse /
// CosineDistance on that sample alone, and so are the errors.
#ifndef QUANTD_CORE_MIXED_PRECISION_DISTANCE_LANES_H_
#define QUANTD_CORE_MIXED_PRECISION_DISTANCE_LANES_H_

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace quantd::mixed_precision {

// What every candidate's distance needs from one float output.
struct FloatSideSums {
  double squared_norm = 0;  // sum of f^2 in element order
  bool finite = true;       // no NaN or Inf in f
};

FloatSideSums SumFloatSide(absl::Span<const float> f);

enum class LaneDistance { kNormalizedMse, kCosine };

// out[s] = NormalizedMse(f[s], q[s]) (kCosine: CosineDistance) for every
// sample s, given float_side[s] = SumFloatSide(f[s]). The first sample whose
// one-sample function fails gives the error, with that function's message.
absl::Status DistancesOverSamples(LaneDistance kind,
                                  absl::Span<const absl::Span<const float>> f,
                                  absl::Span<const absl::Span<const float>> q,
                                  absl::Span<const FloatSideSums> float_side,
                                  absl::Span<double> out);

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_DISTANCE_LANES_H_
