// The mixed-precision stage of a job (MCT §1.4), run after parameter
// selection and shift-negative correction (whose Add outputs are candidates,
// NodePlan::fixed_threshold) and before the other corrections: resolves the
// resource targets (absolute, or a fraction of the 8-bit figure; the smaller
// wins), builds the candidate list of every node (TPC candidates filtered by
// the restricted target kinds, the consumers' supported input bits and the
// manual bit-width overrides), measures each candidate's sensitivity on the
// executor (sensitivity.h), solves the allocation with CBC and MCT's greedy
// refinement (core/mixed_precision), and writes the chosen candidate of
// every node back into its plan with parameters selected for the chosen
// bits. Overrides alone (no target) pin the overridden nodes without a
// search.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_STAGE_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_STAGE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mixed_precision/resource_figures.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/mixed_precision/mixed_precision_options.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// Whether resource figures pad kernels to the config's simd_size when the
// TPC sets is_simd_padding. MCT's mixed-precision calculator counts
// #params * bits / 8 without padding (is_simd_padding feeds pruning only,
// mct-reference §1.4, §1.6), and IMX500 sets the flag, so padding here would
// make 2- and 4-bit kernels of layers under 128 channels save nothing: off,
// as in MCT. The calculator supports it (resource_calculator_test).
inline constexpr bool kMpSimdPadding = false;

// The samples the sensitivity runs on: the first num_of_images (MCT's
// default 32) of the `calibration` ones.
int MixedPrecisionSensitivitySamples(const MixedPrecisionOptions& options,
                                     int calibration);

// Node name -> sensitivity per TPC candidate of the node (same order as
// its quantization_configurations; -1 = candidate not in the search).
using MixedPrecisionSensitivity = std::map<std::string, std::vector<double>>;

struct MixedPrecisionOutcome {
  // The resolved absolute targets (unset = unrestricted).
  mixed_precision::ResourceFigures targets;
  MixedPrecisionSensitivity sensitivity;
  int configurable_nodes = 0;
  bool proven_optimal = true;
};

// `reuse`: the sensitivities of an earlier search on the same graph (the
// quality target's trials re-select parameters for other options, and its
// equalization trial rescales weights; each trial is measured): when it has
// every candidate of every searched node, the search takes them instead of
// the cone runs, the cost of the stage (docs/quality_target.md).
absl::StatusOr<MixedPrecisionOutcome> RunMixedPrecision(
    const MixedPrecisionOptions& options, bool simd_padding,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const std::vector<SampleFeeds>& samples, JobState* state, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress,
    const MixedPrecisionSensitivity* reuse = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_STAGE_H_
