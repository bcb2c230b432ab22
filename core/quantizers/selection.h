// Quantization-parameter selection, MCT 2.3.0's algorithms and numerics.
//
// Weights (`*SelectionTensor`, per channel or per tensor, float32 tensors):
//  - power of two: candidates 2*PoT(max)/2^i, i < n_iter, argmin of the error;
//  - symmetric: iterative shrinking-range grid search from the no-clipping
//    threshold (40 iterations per tensor, 15 per channel, 30 candidates);
//  - uniform: scaled-range search over 8x8 (min, max) scalers.
//  kNoClipping returns the no-clipping parameters without search. With
//  per_channel and no channel_axis every axis is tried and the best one kept.
// Activations (`*SelectionHistogram`, per tensor, from a histogram) follow
// the same searches with MCT's histogram constants; `*NoClippingMinMax` are
// the variants for bounded outputs (sigmoid, softmax, ...).
#ifndef QUANTD_CORE_QUANTIZERS_SELECTION_H_
#define QUANTD_CORE_QUANTIZERS_SELECTION_H_

#include "absl/status/statusor.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

absl::StatusOr<ThresholdParams> PowerOfTwoSelectionTensor(
    const TensorView& tensor, const WeightsSearchOptions& options);
absl::StatusOr<ThresholdParams> SymmetricSelectionTensor(
    const TensorView& tensor, const WeightsSearchOptions& options);
absl::StatusOr<RangeParams> UniformSelectionTensor(
    const TensorView& tensor, const WeightsSearchOptions& options);

absl::StatusOr<ActivationThreshold> PowerOfTwoSelectionHistogram(
    const Histogram& histogram, const HistogramSearchOptions& options);
absl::StatusOr<ActivationThreshold> SymmetricSelectionHistogram(
    const Histogram& histogram, const HistogramSearchOptions& options);
absl::StatusOr<ActivationRange> UniformSelectionHistogram(
    const Histogram& histogram, const HistogramSearchOptions& options);

// Bounded outputs: parameters straight from the known [min_value, max_value].
absl::StatusOr<ActivationThreshold> PowerOfTwoNoClippingSelectionMinMax(
    double min_value, double max_value, const HistogramSearchOptions& options);
absl::StatusOr<ActivationThreshold> SymmetricNoClippingSelectionMinMax(
    double min_value, double max_value, const HistogramSearchOptions& options);
absl::StatusOr<ActivationRange> UniformNoClippingSelectionMinMax(
    double min_value, double max_value, const HistogramSearchOptions& options);

// Checks a histogram: edges = counts + 1 >= 2, finite, non-decreasing edges,
// non-negative counts, at least one non-empty bin.
absl::Status ValidateHistogram(const Histogram& histogram);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_SELECTION_H_
