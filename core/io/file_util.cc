#include "core/io/file_util.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace quantd {

absl::StatusOr<std::string> ReadFileLimited(const std::string& path,
                                            int64_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file"));
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot stat: ", ec.message()));
  }
  if (size > static_cast<uint64_t>(max_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", size, " bytes exceeds the limit of ", max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": short read (file changed while reading?)"));
  }
  return bytes;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view bytes) {
  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat(path, ": cannot create directory ",
                       target.parent_path().string(), ": ", ec.message()));
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::InternalError(absl::StrCat(
          tmp, ": cannot open for writing: ", std::strerror(errno)));
    }
    errno = 0;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      // Disk full, file size limit, I/O error: say which, and leave no
      // partial file behind.
      const int error = errno;
      std::filesystem::remove(tmp, ec);
      return absl::InternalError(absl::StrCat(
          path, ": write failed after ", bytes.size(), " bytes were given: ",
          error != 0 ? std::strerror(error) : "unknown error"));
    }
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(
        absl::StrCat(path, ": cannot rename from ", tmp));
  }
  return absl::OkStatus();
}

}  // namespace quantd
