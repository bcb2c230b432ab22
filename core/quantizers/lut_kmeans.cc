#include "core/quantizers/lut_kmeans.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/selection.h"
#include "core/util/status_macros.h"

namespace quantd::quantizers {
namespace {

absl::Status CheckBits(int n_bits) {
  if (n_bits < 1 || n_bits >= kLutValuesBitwidth) {
    return absl::InvalidArgumentError(
        absl::StrCat("LUT quantization needs 1 <= n_bits < ",
                     kLutValuesBitwidth, ", got ", n_bits));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LutTensorParams> LutKmeansTensor(
    const TensorView& tensor, const WeightsSearchOptions& options,
    bool is_symmetric, const KMeansOptions& kmeans) {
  RETURN_IF_ERROR(CheckBits(options.n_bits));
  WeightsSearchOptions o = options;
  o.error_method = ErrorMethod::kNoClipping;
  ThresholdParams t;
  if (is_symmetric) {
    ASSIGN_OR_RETURN(t, SymmetricSelectionTensor(tensor, o));
  } else {
    ASSIGN_OR_RETURN(t, PowerOfTwoSelectionTensor(tensor, o));
  }
  LutTensorParams out;
  out.channel_axis = t.channel_axis;
  out.scale_per_channel = t.threshold;
  // Per-channel thresholds are float32 arrays in MCT, per-tensor a float64
  // scalar.
  ASSIGN_OR_RETURN(std::vector<float> x_int,
                   IntQuantizationWithThreshold(
                       tensor, t.threshold, t.channel_axis, kLutValuesBitwidth,
                       /*is_signed=*/true, /*thresholds_f32=*/o.per_channel));
  out.clustering_input.assign(x_int.begin(), x_int.end());
  const std::set<float> unique(tensor.data.begin(), tensor.data.end());
  const int max_clusters = 1 << options.n_bits;
  const int k = std::min<int>(max_clusters, static_cast<int>(unique.size()));
  const std::vector<double> weights(out.clustering_input.size(), 1.0);
  ASSIGN_OR_RETURN(std::vector<double> centers,
                   WeightedKMeans1D(out.clustering_input, weights, k, kmeans));
  for (double& c : centers) c = std::nearbyint(c);
  const bool has_zero =
      std::find(centers.begin(), centers.end(), 0.0) != centers.end();
  if (k < max_clusters && !has_zero) centers.insert(centers.begin(), 0.0);
  size_t nearest = 0;
  for (size_t i = 1; i < centers.size(); ++i) {
    if (std::abs(centers[i]) < std::abs(centers[nearest])) nearest = i;
  }
  centers[nearest] = 0.0;
  out.lut_values = std::move(centers);
  return out;
}

absl::StatusOr<LutHistogramParams> LutKmeansHistogram(
    const Histogram& h, const HistogramSearchOptions& options,
    const KMeansOptions& kmeans) {
  RETURN_IF_ERROR(CheckBits(options.n_bits));
  RETURN_IF_ERROR(ValidateHistogram(h));
  std::set<double> unique;
  double tensor_max = 0;
  bool natural_signed = false;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] > 0) {
      unique.insert(std::abs(h.edges[i + 1]));
      tensor_max = std::max(tensor_max, std::abs(h.edges[i + 1]));
    }
    if (h.counts[i] != 0 && h.edges[i] < 0) natural_signed = true;
  }
  LutHistogramParams out;
  out.is_signed = options.is_signed.value_or(natural_signed);
  out.threshold = MaxPowerOfTwo(tensor_max, options.min_threshold);
  out.clustering_input = IntQuantizationWithThresholdF64(
      h.edges, out.threshold, kLutValuesBitwidth, out.is_signed);
  out.clustering_weights.assign(1, 0.0);
  out.clustering_weights.insert(out.clustering_weights.end(), h.counts.begin(),
                                h.counts.end());
  const int k =
      std::min<int>(1 << options.n_bits, static_cast<int>(unique.size()));
  ASSIGN_OR_RETURN(std::vector<double> centers,
                   WeightedKMeans1D(out.clustering_input,
                                    out.clustering_weights, k, kmeans));
  for (double& c : centers) c = static_cast<float>(std::nearbyint(c));
  out.lut_values = std::move(centers);
  return out;
}

}  // namespace quantd::quantizers
