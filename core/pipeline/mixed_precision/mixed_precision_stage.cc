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

// The smaller of the absolute target and the fraction of the 8-bit figure.
std::optional<double> ResolveTarget(const std::optional<double>& abs,
                                    const std::optional<double>& frac,
                                    double baseline) {
  std::optional<double> out = abs;
  if (frac) {
    const double f = *frac * baseline;
    out = out ? std::min(*out, f) : f;
  }
  return out;
}

// The absolute targets of the job, against the 8-bit figure of the
// attached plan.
mixed_precision::ResourceFigures ResolveTargets(
    const MixedPrecisionOptions& options, const mpi::PlanLayout& pl,
    const JobState& state, bool simd_padding) {
  const ResourceBreakdown base8 = EvaluateResources(
      pl.layout, mpi::CurrentBits(pl, state, simd_padding, 8));
  const ResourceTargets& ta = options.target;
  const ResourceTargets& tf = options.target_fraction;
  mixed_precision::ResourceFigures targets;
  targets.weights_memory_bytes = ResolveTarget(
      ta.weights_memory_bytes, tf.weights_memory_bytes, base8.weights);
  targets.activation_memory_bytes = ResolveTarget(
      ta.activation_memory_bytes, tf.activation_memory_bytes, base8.activation);
  targets.total_memory_bytes =
      ResolveTarget(ta.total_memory_bytes, tf.total_memory_bytes, base8.total);
  targets.bops = ResolveTarget(ta.bops, tf.bops, base8.bops);
  return targets;
}

}  // namespace

int MixedPrecisionSensitivitySamples(const MixedPrecisionOptions& options,
                                     int calibration) {
  return std::max(0, std::min(options.num_of_images, calibration));
}

absl::StatusOr<MixedPrecisionOutcome> RunMixedPrecision(
    const MixedPrecisionOptions& options, bool simd_padding,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const std::vector<SampleFeeds>& samples, JobState* state, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress,
    const MixedPrecisionSensitivity* reuse) {
  MixedPrecisionOutcome outcome;

  // 1. Targets against the 8-bit figure of the attached plan.
  mpi::PlanLayout pl = mpi::BuildPlanLayout(*state, shapes);
  outcome.targets = ResolveTargets(options, pl, *state, simd_padding);
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
                   mpi::BuildNodeSpaces(options, scope, state));

  // 3. Parameters per candidate (the costly searches, in parallel).
  RETURN_IF_ERROR(
      mpi::SelectCandidateParams(scope.search, state, pool, cancel, &spaces));

  // 4. Search (mixed_precision_search.cc).
  RETURN_IF_ERROR(mpi::SearchBitAllocation(
      options, scope.search, pl, simd_padding, samples, state, pool, cancel,
      progress, reuse, &spaces, &outcome));

  // 5. Apply the chosen candidates (mixed_precision_apply.cc).
  mpi::ApplyChosenCandidates(spaces, state, &outcome);
  return outcome;
}

}  // namespace quantd
