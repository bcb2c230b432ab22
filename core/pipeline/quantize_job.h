// The quantization job: QuantizeRequest in, QuantizeResult out.
//
// This is the one entry point that the server (server/), quantctl's
// in-process mode and the batch runner all use, so a request gives the same
// bytes whichever way it runs. Stages: resolve TPC -> import -> prepare graph
// -> calibrate -> select parameters -> corrections -> mixed precision ->
// fine-tune -> export -> report; each reports progress and polls the
// cancellation token inside its loops.
#ifndef QUANTD_CORE_PIPELINE_QUANTIZE_JOB_H_
#define QUANTD_CORE_PIPELINE_QUANTIZE_JOB_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

using TpcRegistry = tpc::TpcRegistry;

// Limits on untrusted input; the server exposes them as flags and in
// GetServerInfo.
struct JobLimits {
  int64_t max_model_bytes = int64_t{1} << 31;  // protobuf's 2 GiB
  int64_t max_nodes = 100000;
  int64_t max_tensor_elements = int64_t{1} << 31;
  int64_t max_samples = 10000;
  int64_t max_sample_bytes = int64_t{4} << 30;  // all samples together
};

struct JobContext {
  const TpcRegistry* registry = nullptr;  // required
  ThreadPool* pool = nullptr;             // null: run single-threaded
  const CancellationToken* cancel = nullptr;
  ProgressSink* progress = nullptr;
  JobLimits limits;
  // Called as each stage starts ("import", "prepare", "calibrate", ...); an
  // error ends the job with it. The server's --fault_injection uses it.
  std::function<absl::Status(const std::string& stage)> on_stage_start;
};

// Cheap checks that need no model parsing: sizes, sample tensors (dtype,
// dims vs bytes, NaN/Inf), option ranges, TPC reference syntax. The server
// runs this before admission; RunQuantizeJob runs it again.
absl::Status ValidateQuantizeRequest(const v1::QuantizeRequest& request,
                                     const JobLimits& limits);

// The part of EstimateJobMemoryBytes known without parsing the model: the
// request's bytes, the model's copies and a fixed overhead. Admission
// reserves it before the import so that parsing is paid from the budget.
int64_t EstimateJobMemoryBytesBeforeImport(const v1::QuantizeRequest& request);

// A rough upper bound of the job's peak memory, for admission control: the
// request's bytes, the model's copies and the activations of
// `samples_in_flight` samples at once (twice the sum of every activation of
// one sample, from the model parsed with `limits` and its shapes inferred
// for the first calibration sample). Parses the model: costs an import.
int64_t EstimateJobMemoryBytes(const v1::QuantizeRequest& request,
                               const JobLimits& limits = {},
                               int samples_in_flight = 1);

// Runs the whole job. Errors name the field or node at fault; CANCELLED or
// DEADLINE_EXCEEDED when the token fires.
absl::StatusOr<v1::QuantizeResult> RunQuantizeJob(
    const v1::QuantizeRequest& request, const JobContext& context);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_QUANTIZE_JOB_H_
