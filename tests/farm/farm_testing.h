// Helpers for the farm tests and benchmark: the example CNN and its sample
// sets written as batch inputs, a manifest over them, and `quantctl` run as
// a child process (signals, exit status, output) without sleeps: waits are
// on the child's exit or bounded polls of a condition.
#ifndef QUANTD_TESTS_FARM_FARM_TESTING_H_
#define QUANTD_TESTS_FARM_FARM_TESTING_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace quantd::testing {

// DIR/example_cnn.onnx plus `sets` calibration folders DIR/calib<k>/ of
// `images` images each (seed k, so every set and every job differs), and
// DIR/manifest.jsonl with 2 jobs per set (activation storage uint8 and
// int8), ids "job-<k>-<storage>". Returns the manifest path.
absl::StatusOr<std::string> WriteFarmManifest(const std::string& dir, int sets,
                                              int images);

// <build>/clients/quantctl/quantctl.
std::string QuantctlBinary();

class ChildProcess {
 public:
  // Runs `argv` (argv[0] is the binary) with stdout and stderr captured.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      std::vector<std::string> argv);
  ~ChildProcess();  // SIGKILL if still running

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // Exit code, or -signal when killed by a signal; DEADLINE_EXCEEDED when
  // it is still running after `timeout`.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  std::string Output() const;

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  std::thread reader_;
  mutable absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  bool exited_ ABSL_GUARDED_BY(mu_) = false;
  int wait_status_ ABSL_GUARDED_BY(mu_) = 0;
};

// Evaluates `condition` every few milliseconds until it holds (true) or
// `timeout` passes (false).
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout);

// Folders under `dir` that hold a result.json (finished jobs).
std::vector<std::string> FinishedJobs(const std::string& dir);

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_FARM_FARM_TESTING_H_
