// One data generation job from its request (quantd.v1.GenerateDataRequest):
// the request's checks, the model's import under the caller's limits and
// GenerateData. The server's GenerateData RPC and `quantctl generate-data`
// in-process both run it, so the same request gives the same images.
#ifndef QUANTD_CORE_DATAGEN_GENERATE_JOB_H_
#define QUANTD_CORE_DATAGEN_GENERATE_JOB_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/datagen/data_generation.h"
#include "core/datagen/options.h"
#include "core/graph/onnx_import.h"
#include "quantd/v1/data_generation.pb.h"

namespace quantd::datagen {

struct GenerateJobContext {
  DataGenContext run;    // pool, cancellation, progress
  ImportOptions import;  // the model's limits
  int64_t max_count = 1'000'000;
  // The model's bytes when the request names an upload (model_ref);
  // otherwise request.onnx_model.
  absl::string_view model_bytes;
  // Called after the import and the input's check with the model and the
  // options: the server estimates the job's memory from them
  // (core/pipeline/memory/job_memory.h) and admits it; an error stops the
  // job.
  std::function<absl::Status(const Model&, const DataGenOptions&)> on_import;
};

// Cheap checks without the model: count, sizes, ranges; names the field.
absl::Status ValidateGenerateDataRequest(const v1::GenerateDataRequest& r,
                                         int64_t max_count);

// The request's options (zero fields take the defaults), statistics parsed.
absl::StatusOr<DataGenOptions> DataGenOptionsFromRequest(
    const v1::GenerateDataRequest& r);

absl::StatusOr<GeneratedData> RunGenerateDataJob(
    const v1::GenerateDataRequest& request, const GenerateJobContext& context);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_GENERATE_JOB_H_
