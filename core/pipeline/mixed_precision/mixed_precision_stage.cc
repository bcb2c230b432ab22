// The facade of the mixed-precision stage (MCT's
// mixed_precision_search_facade): resolves the targets, then runs the
// candidate filter, the search and the setter of internal/
// mixed_precision_space.h in order.
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/pipeline/mixed_precision/internal/mixed_precision_space.h"
#include "core/pipeline/mixed_precision/mixed_precision_resources.h"
#include "core/tpc/attribute_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

namespace mpi = ::quantd::mp_internal;

using mpi::kMaxWeightBits;

bool AnySet(const v1::ResourceUtilization& r) {
  return r.has_weights_memory_bytes() || r.has_activation_memory_bytes() ||
         r.has_total_memory_bytes() || r.has_bops();
}

absl::StatusOr<std::optional<double>> ResolveTarget(bool has_abs, double abs,
                                                    bool has_frac, double frac,
                                                    double baseline,
                                                    const std::string& field) {
  std::optional<double> out;
  if (has_abs) {
    if (!std::isfinite(abs) || abs < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.target.", field, ": ", abs,
                       " is not a finite value >= 0"));
    }
    out = abs;
  }
  if (has_frac) {
    if (!std::isfinite(frac) || !(frac > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.target_fraction.", field, ": ", frac,
                       " is not a finite value > 0"));
    }
    const double f = frac * baseline;
    out = out ? std::min(*out, f) : f;
  }
  return out;
}

// The absolute targets of the request, against the 8-bit figure of the
// attached plan.
absl::Status ResolveTargets(const v1::MixedPrecisionConfig& config,
                            const mpi::PlanLayout& pl, const JobState& state,
                            bool simd_padding,
                            mixed_precision::ResourceFigures* targets) {
  const ResourceBreakdown base8 = EvaluateResources(
      pl.layout, mpi::CurrentBits(pl, state, simd_padding, 8));
  const auto& ta = config.target();
  const auto& tf = config.target_fraction();
  ASSIGN_OR_RETURN(
      targets->weights_memory_bytes,
      ResolveTarget(ta.has_weights_memory_bytes(), ta.weights_memory_bytes(),
                    tf.has_weights_memory_bytes(), tf.weights_memory_bytes(),
                    base8.weights, "weights_memory_bytes"));
  ASSIGN_OR_RETURN(targets->activation_memory_bytes,
                   ResolveTarget(ta.has_activation_memory_bytes(),
                                 ta.activation_memory_bytes(),
                                 tf.has_activation_memory_bytes(),
                                 tf.activation_memory_bytes(), base8.activation,
                                 "activation_memory_bytes"));
  ASSIGN_OR_RETURN(
      targets->total_memory_bytes,
      ResolveTarget(ta.has_total_memory_bytes(), ta.total_memory_bytes(),
                    tf.has_total_memory_bytes(), tf.total_memory_bytes(),
                    base8.total, "total_memory_bytes"));
  ASSIGN_OR_RETURN(targets->bops,
                   ResolveTarget(ta.has_bops(), ta.bops(), tf.has_bops(),
                                 tf.bops(), base8.bops, "bops"));
  return absl::OkStatus();
}

}  // namespace

bool MixedPrecisionRequested(const v1::MixedPrecisionConfig& config) {
  return AnySet(config.target()) || AnySet(config.target_fraction()) ||
         config.bit_width_overrides_size() > 0;
}

bool MixedPrecisionSearches(const v1::MixedPrecisionConfig& config) {
  return AnySet(config.target()) || AnySet(config.target_fraction());
}

bool MixedPrecisionSearchesWeightsOnly(const v1::MixedPrecisionConfig& config) {
  auto others = [](const v1::ResourceUtilization& r) {
    return r.has_activation_memory_bytes() || r.has_total_memory_bytes() ||
           r.has_bops();
  };
  return MixedPrecisionSearches(config) && !others(config.target()) &&
         !others(config.target_fraction());
}

int MixedPrecisionSensitivitySamples(const v1::MixedPrecisionConfig& config,
                                     int calibration) {
  const int images = config.num_of_images() > 0 ? config.num_of_images()
                                                : mpi::kDefaultNumImages;
  return std::max(0, std::min(images, calibration));
}

absl::Status ValidateMixedPrecisionConfig(
    const v1::MixedPrecisionConfig& config) {
  for (int k = 0; k < config.bit_width_overrides_size(); ++k) {
    const auto& o = config.bit_width_overrides(k);
    const std::string path =
        absl::StrCat("mixed_precision.bit_width_overrides[", k, "]");
    if (o.filter().filter_case() == v1::NodeFilter::FILTER_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".filter: no node_type, node_name or name_scope"));
    }
    if (o.target() == v1::BitWidthOverride::TARGET_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".target: WEIGHTS or ACTIVATION required"));
    }
    if (o.bits() <= 0 || o.bits() > 32) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".bits: ", o.bits(), " is not in [1, 32]"));
    }
    if (!o.attr().empty() && o.attr() != tpc::kKernelAttr) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".attr: '", o.attr(),
                       "' (only kernel_attr has per-candidate bits)"));
    }
  }
  if (config.sensitivity_depth() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.sensitivity_depth: ", config.sensitivity_depth(),
        " < 0"));
  }
  if (config.num_of_images() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.num_of_images: ", config.num_of_images(), " < 0"));
  }
  if (config.has_solver_time_limit_seconds() &&
      !(config.solver_time_limit_seconds() > 0)) {
    return absl::InvalidArgumentError(
        "mixed_precision.solver_time_limit_seconds: must be > 0");
  }
  // `!(x >= lo)` also catches NaN.
  if (config.has_metric_epsilon() && !(std::isfinite(config.metric_epsilon()) &&
                                       config.metric_epsilon() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.metric_epsilon: ", config.metric_epsilon(),
        " is not a finite number >= 0"));
  }
  if (config.has_exp_distance_weighting_sigma() &&
      !(std::isfinite(config.exp_distance_weighting_sigma()) &&
        config.exp_distance_weighting_sigma() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.exp_distance_weighting_sigma: ",
        config.exp_distance_weighting_sigma(), " is not a finite number > 0"));
  }
  if (config.kernel_weights_bits() < 0 ||
      config.kernel_weights_bits() > kMaxWeightBits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.kernel_weights_bits: ", config.kernel_weights_bits(),
        " is not in [1, ", kMaxWeightBits, "] (0 = unset)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MixedPrecisionOutcome> RunMixedPrecision(
    const v1::MixedPrecisionConfig& config, bool simd_padding,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const std::vector<SampleFeeds>& samples, JobState* state, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  RETURN_IF_ERROR(ValidateMixedPrecisionConfig(config));
  MixedPrecisionOutcome outcome;

  // 1. Targets against the 8-bit figure of the attached plan.
  mpi::PlanLayout pl = mpi::BuildPlanLayout(*state, shapes);
  RETURN_IF_ERROR(
      ResolveTargets(config, pl, *state, simd_padding, &outcome.targets));
  const bool w_r = outcome.targets.weights_memory_bytes.has_value();
  const bool a_r = outcome.targets.activation_memory_bytes.has_value();
  const bool t_r = outcome.targets.total_memory_bytes.has_value();
  const bool b_r = outcome.targets.bops.has_value();
  mpi::SearchScope scope;
  scope.search = w_r || a_r || t_r || b_r;
  scope.weights_only = scope.search && !a_r && !t_r && !b_r;
  scope.activation_only = scope.search && a_r && !w_r && !t_r && !b_r;

  // 2. Candidate lists (mixed_precision_candidates.cc).
  ASSIGN_OR_RETURN(std::vector<mpi::NodeSpace> spaces,
                   mpi::BuildNodeSpaces(config, scope, state));

  // 3. Parameters per candidate (the costly searches, in parallel).
  RETURN_IF_ERROR(
      mpi::SelectCandidateParams(scope.search, state, pool, cancel, &spaces));

  // 4. Search (mixed_precision_search.cc).
  RETURN_IF_ERROR(mpi::SearchBitAllocation(
      config, scope.search, pl, simd_padding, samples, state, pool, cancel,
      progress, &spaces, &outcome));

  // 5. Apply the chosen candidates (mixed_precision_apply.cc).
  mpi::ApplyChosenCandidates(spaces, state, &outcome);
  return outcome;
}

}  // namespace quantd
