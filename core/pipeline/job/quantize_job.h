// The quantization job: QuantizeRequest in, QuantizeResult out.
//
// This is the one entry point that the server (server/), quantctl's
// in-process mode and the batch runner all use, so a request gives the same
// bytes whichever way it runs. Stages: resolve TPC -> import -> prepare graph
// -> calibrate -> select parameters -> corrections -> mixed precision ->
// fine-tune -> export -> report; each reports progress and polls the
// cancellation token inside its loops.
#ifndef QUANTD_CORE_PIPELINE_JOB_QUANTIZE_JOB_H_
#define QUANTD_CORE_PIPELINE_JOB_QUANTIZE_JOB_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/memory/job_memory_stage.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// Where the preflight takes what the caller already has (the server: the
// TPC it named in the Accepted event, an upload's bytes). Views: they must
// outlive the job.
struct PreflightSources {
  // Both non-null: the request passed ValidateQuantizeRequest, which gave
  // `spec`, and its TPC is resolved; neither is done again.
  const ResolvedTpc* tpc = nullptr;
  const JobSpec* spec = nullptr;
  // Non-empty: the model bytes (else request.onnx_model).
  absl::string_view model_bytes;
  // Non-null: the calibration samples (else the request's).
  const google::protobuf::RepeatedPtrField<v1::Sample>* calibration_samples =
      nullptr;
};

struct JobContext {
  const TpcRegistry* registry = nullptr;  // required unless sources.tpc is set
  ThreadPool* pool = nullptr;             // null: run single-threaded
  const CancellationToken* cancel = nullptr;
  ProgressSink* progress = nullptr;
  JobLimits limits;
  PreflightSources sources;
  // Called as each stage starts ("import", "prepare", "calibrate", ...); an
  // error ends the job with it. The server's --fault_injection uses it.
  std::function<absl::Status(const std::string& stage)> on_stage_start;
  // Called once the model is imported and the samples decoded, before any
  // stage runs on them; an error ends the job with it. The server refines
  // the job's admission ticket with EstimateJobMemoryBytes here, and frees
  // the request's model bytes and calibration samples, which the job does
  // not read again (JobInput.request_payload_bytes).
  std::function<absl::Status(const JobInput& input)> on_preflight;
  // Called as the job reaches a part that admission did not reserve for
  // (job_memory_stage.h; a part may be reached again); an error ends the
  // job with it. The server admits the job with the estimate of
  // kAdmitted alone (JobMemoryReservation) and grows its ticket here to
  // the estimate of every stage reached so far, waiting for room.
  std::function<absl::Status(JobMemoryStage stage)> on_memory_stage;
};

// Runs the whole job: preflight (preflight.h) in the "import" stage, then
// every stage on the parsed input. Errors name the field or node at fault;
// CANCELLED or DEADLINE_EXCEEDED when the token fires.
absl::StatusOr<v1::QuantizeResult> RunQuantizeJob(
    const v1::QuantizeRequest& request, const JobContext& context);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_QUANTIZE_JOB_H_
