// Runs the real `quantd` binary for integration tests: port 0, stdout
// captured line by line, the chosen ports read from its "listening" log
// line, signals and exit status. Waits are on log lines or process exit,
// never on sleeps.
#ifndef QUANTD_TESTS_INTEGRATION_SERVER_PROCESS_H_
#define QUANTD_TESTS_INTEGRATION_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/testing/subprocess.h"

namespace quantd::testing {

// The build tree: $QUANTD_BINARY_DIR, else found from this test's own path
// (<build>/tests/integration/<test>).
std::string BuildDir();
// <build>/<relative>.
std::string BuildPath(const std::string& relative);
// <build>/server/quantd.
std::string QuantdBinary();

class ServerProcess {
 public:
  // Starts quantd with `args` (plus --port=0 --metrics_port=0 unless given)
  // and `env` entries ("NAME=value") added to the environment, and waits
  // for it to listen.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      std::vector<std::string> args, std::vector<std::string> env = {});
  // SIGKILL if still running.

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  pid_t pid() const { return process_->pid(); }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

  // The first JSON log line (after `from` lines) whose "msg" equals `msg`
  // and whose fields include every `match` pair.
  absl::StatusOr<nlohmann::json> WaitForLog(
      const std::string& msg,
      const std::vector<std::pair<std::string, std::string>>& match = {},
      absl::Duration timeout = absl::Seconds(30));
  std::vector<std::string> Lines() const { return process_->Lines(); }

  void Signal(int signal) { process_->Signal(signal); }
  // Exit code, or an error if it did not exit in time / was killed.
  absl::StatusOr<int> WaitExit(absl::Duration timeout = absl::Seconds(30));

 private:
  ServerProcess() = default;

  std::unique_ptr<Subprocess> process_;
  int port_ = 0;
  int metrics_port_ = 0;
};

// GET http://127.0.0.1:<port><path>; the response body.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// Value of the Prometheus sample whose line starts with `series` (name plus
// exact label set as the server prints it), or -1 if absent.
double MetricValue(const std::string& exposition, const std::string& series);

// Polls GET /metrics until every `series` reaches its minimum value; the
// last exposition. Counters a server bumps after the client already holds
// the call's status (a stream's handled_total) settle a moment later.
absl::StatusOr<std::string> WaitForMetrics(
    int port, const std::vector<std::pair<std::string, double>>& minimums,
    absl::Duration timeout = absl::Seconds(10));

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_INTEGRATION_SERVER_PROCESS_H_
