// The `report` stage of a job, after export: the fake-quant model evaluated
// against float on the report's samples, then the QuantizedGraph (built once,
// every result known) and the report's figures, warnings and details.
#ifndef QUANTD_CORE_PIPELINE_JOB_REPORT_STAGE_H_
#define QUANTD_CORE_PIPELINE_JOB_REPORT_STAGE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/quality_target/quality_target.h"
#include "core/qdq/qdq_plan.h"
#include "core/report/report.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "quantd/v1/quantized_graph.pb.h"

namespace quantd {

// What the report is built from besides the job state and the Q/DQ plan.
struct ReportStageInputs {
  const JobSpec* spec = nullptr;
  const ResolvedTpc* tpc = nullptr;
  // The float model as calibrated (before the corrections): the reference.
  const Executor* float_model = nullptr;
  const ExecutorOptions* exec_options = nullptr;
  const std::vector<SampleFeeds>* evaluation = nullptr;
  int num_calibration_samples = 0;
  const std::string* model_sha256 = nullptr;
  // Tensor shapes of the calibration (resource figures).
  const std::map<std::string, std::vector<int64_t>>* shapes = nullptr;
  const MixedPrecisionOutcome* mixed_precision = nullptr;
  const std::vector<LayerSensitivity>* sensitivity = nullptr;
  // Float runs calibration kept for the report's samples (may be empty).
  KeptFloatRuns* kept = nullptr;
};

struct JobReport {
  ReportData report;  // without the stage timings
  v1::QuantizedGraph quantized_graph;
};

// Evaluates and assembles the report; `target` (the quality-target stage's
// outcome, if it ran) is checked on the final model (FAILED_PRECONDITION when
// it falls short) and moves into the report. Target overruns of the final
// resource figures are added to state->warnings.
absl::StatusOr<JobReport> BuildJobReport(
    const ReportStageInputs& in, const QdqPlan& plan,
    std::optional<QualityTargetOutcome> target, JobState* state,
    const CancellationToken* cancel, ProgressSink* sink);

// The report, the QuantizedGraph and the figures into the result.
void FillResult(const ReportData& report, const ResolvedTpc& tpc,
                v1::QuantizedGraph qg, v1::QuantizeResult* result);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_REPORT_STAGE_H_
