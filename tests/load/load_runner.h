// Load generator for quantd (docs/reliability.md): many concurrent streams of
// small jobs plus a few large-model jobs against one server, recording what
// was accepted, rejected (RESOURCE_EXHAUSTED before `accepted`) and
// completed, the latency of accepted jobs, and the server's peak RSS.
//
//   LoadSpec spec{.streams = 16, .jobs_per_stream = 4};
//   spec.small_job = SmallJob("small");
//   spec.large_jobs = {large_request};
//   ASSIGN_OR_RETURN(LoadReport r, RunLoad(server.target(), server_pid, spec));
#ifndef QUANTD_TESTS_LOAD_LOAD_RUNNER_H_
#define QUANTD_TESTS_LOAD_LOAD_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quantd/v1/job.pb.h"

namespace quantd::load {

struct LoadSpec {
  int streams = 16;         // concurrent clients sending small jobs
  int jobs_per_stream = 4;  // one after the other on each stream
  v1::QuantizeRequest small_job;
  // Sent once each, concurrently with the streams, on their own clients.
  std::vector<v1::QuantizeRequest> large_jobs;
};

struct LoadReport {
  int64_t submitted = 0;
  int64_t accepted = 0;   // saw the `accepted` event
  int64_t rejected = 0;   // RESOURCE_EXHAUSTED before `accepted`
  int64_t completed = 0;  // accepted and returned a result
  int64_t large_completed = 0;
  // Accepted jobs that ended with an error, and calls that failed in a way
  // that is neither a result nor a clean rejection: code -> count, plus one
  // message per code.
  std::map<std::string, int64_t> failures;
  std::map<std::string, std::string> failure_messages;
  // Seconds from submission to the result, accepted small jobs only.
  double p50_seconds = 0, p90_seconds = 0, p99_seconds = 0, max_seconds = 0;
  double wall_seconds = 0;
  int64_t peak_rss_kb = 0;  // VmHWM of the server after the run
  int64_t rss_kb = 0;       // VmRSS of the server after the run

  std::string ToString() const;
};

// Runs `spec` against the server at `target` whose process is `server_pid`
// (for /proc/PID/status). Fails only when the run itself cannot be done
// (no channel, no /proc); job outcomes are in the report.
absl::StatusOr<LoadReport> RunLoad(const std::string& target, pid_t server_pid,
                                   const LoadSpec& spec);

// VmHWM / VmRSS (kB) of a process, from /proc/PID/status.
absl::StatusOr<int64_t> ProcStatusKb(pid_t pid, const std::string& field);

// The child process of this one whose executable is named `name` (tests
// start the server with fork/exec), or an error.
absl::StatusOr<pid_t> FindChild(const std::string& name);

// Nearest-rank percentile (p in [0, 100]) of unsorted values; 0 when empty.
double Percentile(std::vector<double> values, double p);

}  // namespace quantd::load

#endif  // QUANTD_TESTS_LOAD_LOAD_RUNNER_H_
