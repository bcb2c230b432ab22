// Whole-file reads and writes with the size checked before reading, for the
// untrusted files quantd loads (models, samples).
#ifndef QUANTD_CORE_IO_FILE_UTIL_H_
#define QUANTD_CORE_IO_FILE_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quantd {

// NOT_FOUND if `path` does not exist, INVALID_ARGUMENT if it is not a regular
// file or is larger than `max_bytes`; errors name the path.
absl::StatusOr<std::string> ReadFileLimited(const std::string& path,
                                            int64_t max_bytes);

// Writes `bytes` to `path` + ".tmp" and renames it over `path`, so a reader
// never sees a half-written file. Creates missing parent directories.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view bytes);

}  // namespace quantd

#endif  // QUANTD_CORE_IO_FILE_UTIL_H_
