// `--calib generated:N[,shape=CxHxW][,range=LO:HI][,iterations=K][,batch=B]
// [,lr=X][,seed=S]`: calibration data generated for the job instead of read
// from a folder (quantctl quantize, batch manifests).
#ifndef QUANTD_CORE_DATAGEN_CALIB_SPEC_H_
#define QUANTD_CORE_DATAGEN_CALIB_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/datagen/options.h"

namespace quantd::datagen {

inline constexpr char kGeneratedCalibPrefix[] = "generated:";

bool IsGeneratedCalibSpec(const std::string& calib);
// INVALID_ARGUMENT naming the part at fault.
absl::StatusOr<DataGenOptions> ParseGeneratedCalibSpec(
    const std::string& calib);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_CALIB_SPEC_H_
