// Helpers for the farm tests and benchmark: the example CNN and its sample
// sets written as batch inputs, a manifest over them, and the path of
// `quantctl` (run with tests/testing/subprocess.h). Waits are on the child's
// exit or bounded polls of a condition, never sleeps.
#ifndef QUANTD_TESTS_FARM_FARM_TESTING_H_
#define QUANTD_TESTS_FARM_FARM_TESTING_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

// Evaluates `condition` every few milliseconds until it holds (true) or
// `timeout` passes (false).
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout);

// Folders under `dir` that hold a result.json (finished jobs).
std::vector<std::string> FinishedJobs(const std::string& dir);

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_FARM_FARM_TESTING_H_
