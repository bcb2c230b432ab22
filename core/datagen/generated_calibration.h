// QuantizeRequest.generated_calibration (proto/quantd/v1/job.proto): the
// data generation options a Quantize job generates its calibration images
// with, to and from DataGenOptions. The job's `generate` stage, the server's
// checks and the clients (`--calib generated:N`, the Python option) share
// these, so a spec means the same options in-process and on a server.
#ifndef QUANTD_CORE_DATAGEN_GENERATED_CALIBRATION_H_
#define QUANTD_CORE_DATAGEN_GENERATED_CALIBRATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/datagen/options.h"
#include "quantd/v1/job.pb.h"

namespace quantd::datagen {

// Cheap checks without the model; errors name the field
// (`generated_calibration.count: ...`).
absl::Status ValidateGeneratedCalibration(const v1::GeneratedCalibration& g,
                                          int64_t max_count);

// Zero fields take MCT's defaults; batch_size 0 = min(count, 32).
absl::StatusOr<DataGenOptions> DataGenOptionsFromGeneratedCalibration(
    const v1::GeneratedCalibration& g);

// The message for `options` (every field explicit). Statistics are not
// carried (the `generated:` spec has none); set statistics_json for them.
v1::GeneratedCalibration GeneratedCalibrationFromOptions(
    const DataGenOptions& options);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_GENERATED_CALIBRATION_H_
