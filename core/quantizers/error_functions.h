// MCT's quantization error functions (error_functions.py,
// similarity_analyzer.py).
//
// Tensor errors compare a float tensor with its quantized version: MSE
// mean((x-q)^2), MAE mean(|x-q|), LP mean(|x-q|^p), HMSE mean((h(x-q))^2)
// with per-element Hessian scores h, and KL (2048-bin histogram of x, edges
// quantized uniformly in [range_min, range_max], then the histogram KL).
// Histogram errors weight the left edge of every bin by its count:
// sum(f(q_edges - edges)[:-1] * counts) / sum(counts); histogram KL clips
// the mass outside the range into the first/last in-range bins and spreads
// each quantized level's mass over its non-empty bins (MCT's smoothing).
#ifndef QUANTD_CORE_QUANTIZERS_ERROR_FUNCTIONS_H_
#define QUANTD_CORE_QUANTIZERS_ERROR_FUNCTIONS_H_

#include "absl/types/span.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

// Float32 error between x and q (NumPy float32 reductions). kKl is not a
// pointwise error: use KlTensorError. kHmse needs `hessian` (same size).
double TensorError(ErrorMethod method, absl::Span<const float> x,
                   absl::Span<const float> q, double p = kDefaultLpValue,
                   absl::Span<const float> hessian = {});
// Float64 flavour (per-channel searches).
double TensorErrorF64(ErrorMethod method, absl::Span<const double> x,
                      absl::Span<const double> q, double p = kDefaultLpValue,
                      absl::Span<const float> hessian = {});

// _kl_error_function: KL between the 2048-bin histogram of x and its
// quantization in [range_min, range_max]; +inf for an invalid range.
// `range_is_array` selects float64 arithmetic for the range (MCT passes a
// per-channel threshold as a 1-element float64 array) instead of casting it
// to float32.
double KlTensorError(absl::Span<const float> x, double range_min,
                     double range_max, int n_bits, bool range_is_array = false);

// MSE / MAE / LP histogram error of quantized edges `q_edges`.
double HistogramError(ErrorMethod method, const Histogram& histogram,
                      absl::Span<const double> q_edges,
                      double p = kDefaultLpValue);
// _kl_error_histogram over [range_min, range_max].
double KlHistogramError(const Histogram& histogram,
                        absl::Span<const double> q_edges, double range_min,
                        double range_max);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_ERROR_FUNCTIONS_H_
