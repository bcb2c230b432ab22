#include "core/pipeline/export/export_formats.h"

#include "absl/strings/str_cat.h"

namespace quantd {

bool WantsExportFormat(const v1::ExportOptions& options,
                       v1::ExportFormat format) {
  if (options.formats().empty()) return format == v1::EXPORT_FORMAT_QDQ;
  for (int f : options.formats()) {
    if (f == format) return true;
  }
  return false;
}

absl::Status ValidateExportFormats(const v1::ExportOptions& options) {
  for (int i = 0; i < options.formats_size(); ++i) {
    const int f = options.formats(i);
    if (f != v1::EXPORT_FORMAT_QDQ && f != v1::EXPORT_FORMAT_MCTQ) {
      return absl::InvalidArgumentError(
          absl::StrCat("export_options.formats[", i, "]: ", f,
                       " is not a format (EXPORT_FORMAT_QDQ or "
                       "EXPORT_FORMAT_MCTQ)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
