// LUT (non-uniform) quantization parameters: lut_kmeans_tensor and
// lut_kmeans_histogram (MCT 2.3.0, lut_kmeans_params.py).
//
// Weights: T = the power-of-two (LUT_POT) or symmetric (LUT_SYM) no-clipping
// threshold per channel; x_int = clip(W / (T + 1e-8) * 2^7, -128, 127);
// k = min(2^n, #unique(W)) centers of x_int (one LUT shared by all channels),
// rounded; 0 is prepended when k < 2^n and no center is 0; the center nearest
// to 0 becomes exactly 0. Activations (LUT_POT only): T = PoT of the largest
// non-empty |edge|, the edges on the int8/uint8 grid clustered with the
// counts as weights (the first edge weighs 0), centers rounded.
#ifndef QUANTD_CORE_QUANTIZERS_LUT_KMEANS_H_
#define QUANTD_CORE_QUANTIZERS_LUT_KMEANS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/quantizers/kmeans.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

struct LutTensorParams {
  std::vector<double> lut_values;         // integers on the int8 grid
  std::vector<double> scale_per_channel;  // T per channel (or 1)
  int channel_axis = 0;
  std::vector<double> clustering_input;  // x_int, the k-means points
};

struct LutHistogramParams {
  std::vector<double> lut_values;  // rounded, on the (u)int8 grid
  double threshold = 0;
  bool is_signed = false;
  std::vector<double> clustering_input;    // edges on the grid
  std::vector<double> clustering_weights;  // counts with a 0 prepended
};

// n_bits must be < 8. `is_symmetric` selects LUT_SYM (symmetric threshold).
absl::StatusOr<LutTensorParams> LutKmeansTensor(
    const TensorView& tensor, const WeightsSearchOptions& options,
    bool is_symmetric, const KMeansOptions& kmeans = {});

absl::StatusOr<LutHistogramParams> LutKmeansHistogram(
    const Histogram& histogram, const HistogramSearchOptions& options,
    const KMeansOptions& kmeans = {});

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_LUT_KMEANS_H_
