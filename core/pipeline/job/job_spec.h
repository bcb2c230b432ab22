// The job spec: every option of a quantize request as plain C++, resolved
// and checked once (ResolveJobSpec), with one wording per error naming the
// field. The server's cheap checks on the gRPC thread and the job's
// preflight call the same function; the stages read the spec, never the
// request.
#ifndef QUANTD_CORE_PIPELINE_JOB_JOB_SPEC_H_
#define QUANTD_CORE_PIPELINE_JOB_JOB_SPEC_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/datagen/options.h"
#include "core/pipeline/evaluation/sensitivity_method.h"
#include "core/pipeline/export/export_options.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/job/ptq_options.h"
#include "core/pipeline/mixed_precision/mixed_precision_options.h"
#include "core/pipeline/prep/attach.h"
#include "core/pipeline/quality_target/quality_target_options.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// Without evaluation samples the report evaluates on the first 16
// calibration samples: enough for stable per-layer SQNR figures at a
// quarter of the cost of 64.
inline constexpr int kDefaultReportSamples = 16;

struct JobSpec {
  PtqOptions ptq;
  // The request set data_channel_equalization either way: the quality
  // target does not try the other value.
  bool data_channel_equalization_set = false;
  AttachOptions attach;
  MixedPrecisionOptions mixed_precision;
  bool gptq_enabled = false;
  // GPTQ's options when GPTQ may run (enabled, or the quality target's
  // trial).
  std::optional<GptqOptions> gptq;
  ExportOptions export_options;
  std::optional<QualityTargetOptions> target;
  // The report's samples without evaluation samples; -1 = all.
  int report_samples = kDefaultReportSamples;
  bool sensitivity_analysis = false;
  SensitivityMethod sensitivity_method = SensitivityMethod::kAuto;
  // Calibration images generated from the model (generated_calibration).
  std::optional<datagen::DataGenOptions> generate;
  // Filters that match no node fail the job.
  bool strict = false;
  // The request's option messages in one line each, as the report shows
  // them.
  std::string options_text;

  // A target without GPTQ enabled and without skip_gptq: the target's last
  // trial is GPTQ.
  bool TargetTriesGptq() const {
    return target.has_value() && !gptq_enabled && !target->skip_gptq;
  }
  // GPTQ enabled or tried by the target.
  bool GptqMayRun() const { return gptq_enabled || TargetTriesGptq(); }
};

// Every option of `request` checked and resolved; INVALID_ARGUMENT (or
// UNIMPLEMENTED for an option this version cannot honour) naming the field.
// Reads no payload: the model and the samples are the preflight's.
absl::StatusOr<JobSpec> ResolveJobSpec(const v1::QuantizeRequest& request);

// QuantizeRequest.report_samples as a count; -1 = all.
int ReportSampleCount(int report_samples);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_JOB_SPEC_H_
