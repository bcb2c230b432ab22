// A child process for fault tests: argv run with stdout and stderr on one
// pipe read line by line, optional RLIMIT_FSIZE, kill and wait. Reads block
// on the pipe (no sleeps); a child that exits ends every read.
#ifndef QUANTD_TESTS_FAULT_CHILD_PROCESS_H_
#define QUANTD_TESTS_FAULT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace quantd::testing {

class ChildProcess {
 public:
  struct Options {
    // RLIMIT_FSIZE of the child in bytes; SIGXFSZ is ignored, so writes
    // beyond it fail with EFBIG like a full disk.
    std::optional<int64_t> max_file_bytes;
  };
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const Options& options = {});
  ~ChildProcess();  // SIGKILL and reap if still running

  // The next output line (without '\n'), or nullopt at end of output.
  std::optional<std::string> ReadLine();
  // Reads until a line starting with `prefix`; nullopt if output ends first.
  std::optional<std::string> ReadUntil(const std::string& prefix);
  // Everything read so far, one line per entry.
  const std::vector<std::string>& lines() const { return lines_; }

  void Kill(int signal);
  // Exit code, or -signal when killed by a signal.
  int Wait();

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  bool reaped_ = false;
  int status_ = 0;
  std::vector<std::string> lines_;
};

// <build>/<relative>, the build tree found as in server_process.h.
std::string BuildPath(const std::string& relative);

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_FAULT_CHILD_PROCESS_H_
