// What a job asks of mixed precision (QuantizeRequest.mixed_precision,
// resolved once by the job spec): resource targets, bit-width overrides and
// MCT's search settings, defaults applied.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_OPTIONS_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/mixed_precision/distance_weighting.h"
#include "core/pipeline/prep/node_filter.h"

namespace quantd {

// MCT's MP_DEFAULT_NUM_SAMPLES: the sensitivity's calibration samples.
inline constexpr int kDefaultNumImages = 32;

// Targets per resource (unset = unrestricted): absolute bytes / BOPs, or
// fractions of the 8-bit figure.
struct ResourceTargets {
  std::optional<double> weights_memory_bytes;
  std::optional<double> activation_memory_bytes;
  std::optional<double> total_memory_bytes;
  std::optional<double> bops;

  bool AnySet() const {
    return weights_memory_bytes || activation_memory_bytes ||
           total_memory_bytes || bops;
  }
  bool SetsOtherThanWeights() const {
    return activation_memory_bytes || total_memory_bytes || bops;
  }
};

// Pins the kernel weights or the output activation of the matching nodes
// to `bits`.
struct BitWidthOverride {
  NodeFilter filter;
  bool weights = false;  // else the output activation
  int bits = 0;
};

struct MixedPrecisionOptions {
  ResourceTargets target;
  ResourceTargets target_fraction;
  std::vector<BitWidthOverride> overrides;
  mixed_precision::DistanceWeighting weighting =
      mixed_precision::DistanceWeighting::kAvg;
  double exp_distance_weighting_sigma = 0.1;
  int num_of_images = kDefaultNumImages;
  bool refine_solution = true;
  double metric_epsilon = 1e-6;
  double num_interest_points_factor = 1.0;
  double solver_time_limit_seconds = 60.0;
  int kernel_weights_bits = 0;  // every kernel at these bits; 0 = unset
  // 0 = MCT's sensitivity; N > 0 stops each cone at the N-th interest point.
  int sensitivity_depth = 0;

  // A target or an override: the stage has something to do.
  bool Requested() const { return Searches() || !overrides.empty(); }
  // A target: the stage measures sensitivities and solves an allocation.
  bool Searches() const { return target.AnySet() || target_fraction.AnySet(); }
  // A weights target alone: only the kernels' bits vary (MCT's rule).
  bool SearchesWeightsOnly() const {
    return Searches() && !target.SetsOtherThanWeights() &&
           !target_fraction.SetsOtherThanWeights();
  }
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_OPTIONS_H_
