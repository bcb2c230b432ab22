#include "clients/batch/output_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/io/file_util.h"
#include "core/util/json_text.h"
#include "core/util/status_macros.h"

namespace quantd::batch {
namespace {

namespace fs = std::filesystem;

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAndSync(const std::string& path, const std::string& bytes) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("creating", path);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status st = ErrnoError("writing", path);
      close(fd);
      return st;
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    absl::Status st = ErrnoError("syncing", path);
    close(fd);
    return st;
  }
  if (close(fd) != 0) return ErrnoError("closing", path);
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening", path);
  const int rc = fsync(fd);
  close(fd);
  if (rc != 0) return ErrnoError("syncing", path);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputDir>> OutputDir::Open(
    const std::string& dir) {
  if (absl::StripAsciiWhitespace(dir).empty()) {
    return absl::InvalidArgumentError("--out: empty folder name");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out ", dir, ": ", ec.message()));
  }
  const std::string lock_path = (fs::path(dir) / ".lock").string();
  // O_NOFOLLOW: a symbolic link planted as .lock would otherwise make us
  // truncate and overwrite its target.
  const int fd =
      open(lock_path.c_str(),
           O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0 && errno == ELOOP) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--out ", dir, ": ", lock_path,
        " is a symbolic link; refusing to follow it (remove it and retry)"));
  }
  if (fd < 0) return ErrnoError("opening", lock_path);
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "--out ", dir, ": ", lock_path,
        " is not a regular file of its own (a hard link, device or fifo); "
        "refusing to write it (remove it and retry)"));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buffer[32] = {};
    const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(lock_path, ": another quantctl batch (pid ",
                     n > 0 ? absl::StripAsciiWhitespace(buffer) : "unknown",
                     ") is writing ", dir));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                   static_cast<ssize_t>(pid.size())) {
    absl::Status st = ErrnoError("writing", lock_path);
    close(fd);
    return st;
  }
  // Anything half-written belongs to a runner that died: we hold the lock.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (absl::StartsWith(entry.path().filename().string(), ".tmp-")) {
      fs::remove_all(entry.path(), ec);
    }
  }
  return std::unique_ptr<OutputDir>(new OutputDir(dir, fd));
}

OutputDir::~OutputDir() {
  flock(lock_fd_, LOCK_UN);
  close(lock_fd_);
}

std::optional<nlohmann::json> OutputDir::ReadRecord(
    const std::string& id) const {
  auto text =
      ReadFileLimited((fs::path(dir_) / id / kRecordFile).string(), 64 << 20);
  if (!text.ok()) return std::nullopt;
  nlohmann::json record =
      nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return std::nullopt;
  return record;
}

absl::Status OutputDir::Commit(
    const std::string& id,
    const std::vector<std::pair<std::string, std::string>>& files,
    const nlohmann::json& record) {
  const std::string tmp =
      (fs::path(dir_) / absl::StrCat(".tmp-", id, "-", getpid())).string();
  const std::string final_dir = (fs::path(dir_) / id).string();
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("creating ", tmp, ": ", ec.message()));
  }
  for (const auto& [name, bytes] : files) {
    RETURN_IF_ERROR(WriteAndSync((fs::path(tmp) / name).string(), bytes));
  }
  // The record goes last: a folder with result.json is complete.
  RETURN_IF_ERROR(WriteAndSync((fs::path(tmp) / kRecordFile).string(),
                               JsonText(record, 2) + "\n"));
  RETURN_IF_ERROR(SyncDir(tmp));
  // An older output (inputs changed) moves aside first: rename() cannot
  // replace a non-empty folder. A crash in between leaves no DIR/<id>, so
  // the job is simply redone.
  const std::string old =
      (fs::path(dir_) / absl::StrCat(".tmp-old-", id, "-", getpid())).string();
  bool moved_old = false;
  if (fs::exists(final_dir, ec)) {
    fs::remove_all(old, ec);
    if (rename(final_dir.c_str(), old.c_str()) != 0) {
      return ErrnoError("moving aside", final_dir);
    }
    moved_old = true;
  }
  if (rename(tmp.c_str(), final_dir.c_str()) != 0) {
    return ErrnoError("renaming into place", final_dir);
  }
  RETURN_IF_ERROR(SyncDir(dir_));
  if (moved_old) fs::remove_all(old, ec);
  return absl::OkStatus();
}

absl::Status OutputDir::WriteFile(const std::string& name,
                                  const std::string& bytes) {
  const std::string path = (fs::path(dir_) / name).string();
  const std::string tmp =
      (fs::path(dir_) / absl::StrCat(".tmp-", name, "-", getpid())).string();
  RETURN_IF_ERROR(WriteAndSync(tmp, bytes));
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError("renaming into place", path);
  }
  return SyncDir(dir_);
}

}  // namespace quantd::batch
