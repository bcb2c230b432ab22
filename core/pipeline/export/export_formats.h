// Which model formats a job exports (ExportOptions.formats).
#ifndef QUANTD_CORE_PIPELINE_EXPORT_EXPORT_FORMATS_H_
#define QUANTD_CORE_PIPELINE_EXPORT_EXPORT_FORMATS_H_

#include "absl/status/status.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// An empty format list means QDQ only.
bool WantsExportFormat(const v1::ExportOptions& options,
                       v1::ExportFormat format);

// INVALID_ARGUMENT naming export_options.formats[i] for an unknown value.
absl::Status ValidateExportFormats(const v1::ExportOptions& options);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_EXPORT_FORMATS_H_
