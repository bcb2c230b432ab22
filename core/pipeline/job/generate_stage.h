// The `generate` stage of a Quantize job that asks for generated calibration
// data (QuantizeRequest.generated_calibration): MCT's data generation on
// the imported float model (core/datagen), whose images become the job's
// calibration samples and, without evaluation samples, the report's.
// Progress is the generation's (stage "generate", the fraction of the
// iterations); the token is polled every iteration.
#ifndef QUANTD_CORE_PIPELINE_JOB_GENERATE_STAGE_H_
#define QUANTD_CORE_PIPELINE_JOB_GENERATE_STAGE_H_

#include "absl/status/status.h"
#include "core/pipeline/job/preflight.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// Fills input->calibration (at most quantization.max_calibration_samples)
// and, when the request sent no evaluation samples, input->evaluation (the
// first report_samples images). Errors: datagen's (FAILED_PRECONDITION for
// a model without BatchNormalization statistics), CANCELLED /
// DEADLINE_EXCEEDED from the token.
absl::Status GenerateCalibration(ThreadPool* pool,
                                 const CancellationToken* cancel,
                                 ProgressSink* progress, JobInput* input);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_GENERATE_STAGE_H_
