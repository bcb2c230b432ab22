#include "core/quantizers/lut_kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

// Lloyd steps on the final LUT: centers move to the rounded weighted mean of
// their points, a center at exactly 0 stays there (the zero MCT forces).
std::vector<double> RefineRounded(std::vector<double> centers,
                                  const std::vector<double>& points,
                                  const std::vector<double>& weights) {
  const size_t k = centers.size();
  std::vector<double> sw(k), sx(k);
  for (int it = 0; it < 50; ++it) {
    std::fill(sw.begin(), sw.end(), 0.0);
    std::fill(sx.begin(), sx.end(), 0.0);
    for (size_t i = 0; i < points.size(); ++i) {
      // The nearest center, the first on ties; its distance kept rather
      // than recomputed per comparison (the same value).
      const double p = points[i];
      size_t best = 0;
      double best_d = std::abs(p - centers[0]);
      for (size_t c = 1; c < k; ++c) {
        const double d = std::abs(p - centers[c]);
        if (d < best_d) {
          best = c;
          best_d = d;
        }
      }
      sw[best] += weights[i];
      sx[best] += weights[i] * p;
    }
    bool changed = false;
    for (size_t c = 0; c < k; ++c) {
      if (centers[c] == 0.0 || sw[c] <= 0) continue;
      const double next = std::nearbyint(sx[c] / sw[c]);
      if (next != centers[c] && next != 0.0) {
        centers[c] = next;
        changed = true;
      }
    }
    if (!changed) break;
  }
  // Integer coordinate descent: rounding the means is not the best integer
  // LUT; try moving each non-zero center by one step while the SSE drops.
  double sse = KMeansObjective(points, weights, centers);
  for (int pass = 0; pass < 64; ++pass) {
    bool improved = false;
    for (size_t c = 0; c < k; ++c) {
      if (centers[c] == 0.0) continue;
      for (double step : {-1.0, 1.0}) {
        const double old = centers[c];
        if (old + step == 0.0) continue;
        centers[c] = old + step;
        const double trial = KMeansObjective(points, weights, centers);
        if (trial < sse) {
          sse = trial;
          improved = true;
        } else {
          centers[c] = old;
        }
      }
    }
    if (!improved) break;
  }
  return centers;
}

// The candidate whose post-processed centers (rounded, zero forced) cluster
// the points best; the first on ties.
template <typename Finish>
std::vector<double> PickBest(const std::vector<std::vector<double>>& candidates,
                             const Finish& finish,
                             const std::vector<double>& points,
                             const std::vector<double>& weights) {
  std::vector<double> best;
  double best_sse = std::numeric_limits<double>::infinity();
  auto consider = [&](std::vector<double> f) {
    const double sse = KMeansObjective(points, weights, f);
    if (sse < best_sse) {
      best_sse = sse;
      best = std::move(f);
    }
  };
  for (const auto& c : candidates) {
    std::vector<double> f = finish(c);
    consider(f);
    consider(RefineRounded(f, points, weights));
  }
  return best;
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
  ASSIGN_OR_RETURN(
      std::vector<std::vector<double>> candidates,
      KMeansCandidates1D(out.clustering_input, weights, k, kmeans));
  auto finish = [&](std::vector<double> centers) {
    for (double& c : centers) c = std::nearbyint(c);
    const bool has_zero =
        std::find(centers.begin(), centers.end(), 0.0) != centers.end();
    if (k < max_clusters && !has_zero) centers.insert(centers.begin(), 0.0);
    size_t nearest = 0;
    for (size_t i = 1; i < centers.size(); ++i) {
      if (std::abs(centers[i]) < std::abs(centers[nearest])) nearest = i;
    }
    centers[nearest] = 0.0;
    return centers;
  };
  out.lut_values = PickBest(candidates, finish, out.clustering_input, weights);
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
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> candidates,
                   KMeansCandidates1D(out.clustering_input,
                                      out.clustering_weights, k, kmeans));
  out.lut_values = PickBest(
      candidates,
      [](std::vector<double> centers) {
        for (double& c : centers) c = static_cast<float>(std::nearbyint(c));
        return centers;
      },
      out.clustering_input, out.clustering_weights);
  return out;
}

}  // namespace quantd::quantizers
