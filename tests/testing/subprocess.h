// A child process for tests: argv run with extra environment entries, an
// optional file size limit and working folder, stdout and stderr captured on
// one pipe (raw and line by line) by a reader thread, signals, and the exit
// status. Waits are on output lines or the child's exit, with timeouts, never
// on sleeps.
#ifndef QUANTD_TESTS_TESTING_SUBPROCESS_H_
#define QUANTD_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace quantd::testing {

class Subprocess {
 public:
  struct Options {
    // "NAME=value" entries appended to this process's environment.
    std::vector<std::string> env;
    // RLIMIT_FSIZE of the child in bytes; SIGXFSZ is ignored, so writes
    // beyond it fail with EFBIG like a full disk.
    std::optional<int64_t> max_file_bytes;
    // The child's working folder (empty: this process's); argv[0] must then
    // be an absolute path.
    std::string cwd;
  };

  // Runs `argv` (argv[0] is the binary's path).
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      std::vector<std::string> argv, const Options& options = {});
  ~Subprocess();  // SIGKILL if still running, then reap

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // Exit code, or -signal when killed by a signal, once the child has
  // exited and its output ended; DEADLINE_EXCEEDED when that takes longer
  // than `timeout`.
  absl::StatusOr<int> Wait(absl::Duration timeout = absl::InfiniteDuration());

  // All output so far, as read.
  std::string Output() const;
  // All output lines so far (without '\n'); an unterminated last line is
  // added once the output ends.
  std::vector<std::string> Lines() const;
  // The first line at index >= `from` for which `match` holds, and its
  // index; NOT_FOUND when the output ends first, DEADLINE_EXCEEDED after
  // `timeout`.
  struct Line {
    size_t index = 0;
    std::string text;
  };
  absl::StatusOr<Line> WaitForLine(
      const std::function<bool(absl::string_view)>& match,
      absl::Duration timeout, size_t from = 0);

  // Sequential reading: the next line after the previous ReadLine, or
  // nullopt at end of output.
  std::optional<std::string> ReadLine();
  // Reads until a line starting with `prefix`; nullopt if output ends first.
  std::optional<std::string> ReadUntil(const std::string& prefix);

 private:
  Subprocess() = default;
  void ReadLoop(int fd);

  pid_t pid_ = -1;
  size_t next_line_ = 0;  // ReadLine's position
  std::thread reader_;
  mutable absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  bool exited_ ABSL_GUARDED_BY(mu_) = false;  // output ended and reaped
  int wait_status_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_TESTING_SUBPROCESS_H_
