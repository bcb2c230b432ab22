// The `target` stage (docs/quality_target.md): finds the cheapest
// configuration the TPC allows whose fake-quantized output reaches the
// request's quality target on the evaluation samples. After selection (and
// mixed precision, if asked) it measures the configuration as requested;
// below the target it (a) tries the job-wide options that cost no memory
// (shift-negative parameter search, activation bias correction, a z-score
// outlier filter, HMSE weights with GPTQ), keeping each that helps, then (b)
// measures every per-tensor bit upgrade the TPC allows at once (the
// ceiling; with a mixed-precision budget the longest ranked prefix within
// it). A ceiling that reaches the target is cut down to the shortest prefix
// of the upgrades ranked by estimated dB per byte (per-layer sensitivity:
// the output SQNR with only that layer left float) by doubling, bisection
// and drops; a ceiling that misses it is kept, with (b2) each option (a)
// kept judged again there. Each trial re-runs the corrections
// (shift-negative correction with each selection, before mixed precision);
// the stage leaves the chosen configuration in the state with the
// corrections applied. The job then runs the channel equalization trial and
// the GPTQ trial when the target is still missed (quantize_job.cc), or GPTQ
// as usual when the request enables it. Deterministic: every figure is
// merged in sample order and every choice is ordered (ties by graph order).
#ifndef QUANTD_CORE_PIPELINE_QUALITY_TARGET_QUALITY_TARGET_H_
#define QUANTD_CORE_PIPELINE_QUALITY_TARGET_QUALITY_TARGET_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/pipeline/job/job_spec.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/memory/job_memory_stage.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/quality_target/target_measure.h"
#include "core/report/report.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// Samples the upgrade ranking's sensitivity analysis runs on: the ranking
// needs an estimate, not the figure.
inline constexpr int kTargetRankingSamples = 4;

// "sqnr" or "cosine".
std::string MetricName(QualityTargetOptions::Metric metric);

// Whether `figure` reaches the target.
bool TargetMet(const QualityTargetOptions& target, double figure);

// The least gain that keeps (or undoes) a trial's change: 0.01 dB, 1e-6
// cosine.
double GainEpsilon(const QualityTargetOptions& target);

// A trial that cannot run on this model (no backward pass for an op,
// nothing to train: UNIMPLEMENTED or FAILED_PRECONDITION) is skipped, not
// the job; other errors, cancellation included, end it.
bool SkipsTheTrial(const absl::Status& status);

struct QualityTargetInputs {
  const JobSpec* spec = nullptr;          // spec->target is set
  const Executor* float_model = nullptr;  // before the corrections
  const std::vector<SampleFeeds>* evaluation = nullptr;
  const std::vector<SampleFeeds>* calibration = nullptr;  // mixed precision
  // Calibration's tensor shapes; each trial's shift-negative correction
  // adds those of the tensors it inserts.
  std::map<std::string, std::vector<int64_t>>* shapes = nullptr;
  // One sample's activations (every one, in bytes; 0 when unknown): sizes
  // the ranking analysis's caches (AnalysisChunkSamples).
  int64_t activation_bytes = 0;
  // A previous search's kept options (QualityTargetOutcome::kept_options):
  // applied at once, and the search starts at the ceiling (every upgrade).
  // The equalization trial's second search reuses the first's this way.
  const std::vector<std::string>* reuse_options = nullptr;
  // The job's parameter selection's weights, which every re-selection whose
  // options leave the weights' search as it was takes instead of searching
  // again (SelectAllParams). Null: each re-selection searches them.
  WeightSelectionCache* selected_weights = nullptr;
  // Called before the parts that hold more memory than the job before them
  // (the ranking: JobMemoryStage::kTargetRanking; the GPTQ trial past its
  // checkpoint); an error ends the search. Null: nothing to tell.
  std::function<absl::Status(JobMemoryStage)> reach_memory_stage;
};

struct QualityTargetOutcome {
  QualityTargetReport report;    // `reached`: the chosen configuration's
  double best_figure = 0;        // the best any trial reached
  std::string best_description;  // what that trial changed
  // The job-wide options the chosen configuration changed, by name.
  std::vector<std::string> kept_options;
  // The search's meter (float outputs of the evaluation samples), which
  // the GPTQ trial measures with.
  std::shared_ptr<const QualityMeter> meter;
};

// `calibrated`: the job state after calibration (before selection);
// `state`: in, after selection and mixed precision as requested; out, the
// chosen configuration, corrected. `mixed_precision` follows the chosen
// configuration's selection.
absl::StatusOr<QualityTargetOutcome> RunQualityTarget(
    const QualityTargetInputs& inputs, const JobState& calibrated,
    JobState* state, MixedPrecisionOutcome* mixed_precision, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress);

// FAILED_PRECONDITION "quality_target: sqnr 40.00 dB out of reach of
// imx500@1.0: best 31.20 dB (what that trial changed); as configured
// 29.80 dB".
absl::Status TargetOutOfReachError(const QualityTargetOptions& target,
                                   const std::string& tpc, double best,
                                   const std::string& how, double baseline);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_QUALITY_TARGET_QUALITY_TARGET_H_
