// One job's memory peak through the real quantd: a fresh server
// (--workers=1, no budget) runs the job alone; its peak is the server's
// VmHWM after the job less its VmRSS when idle. The memory benches compare
// the memory model's estimates against it.
#ifndef QUANTD_BENCH_SERVICE_ONE_JOB_PEAK_H_
#define QUANTD_BENCH_SERVICE_ONE_JOB_PEAK_H_

#include <csignal>
#include <cstdio>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/server_process.h"
#include "tests/load/load_runner.h"

namespace quantd::bench {

// Runs `call` (the job, against the server's target) in a fresh quantd with
// `compute_threads`; the job's peak in MiB, or -1 when the server did not
// start or the job failed (the error on stderr).
inline double OneJobPeakMib(
    int compute_threads,
    const std::function<absl::Status(const std::string& target)>& call) {
  auto server = testing::ServerProcess::Start(
      {"--workers=1", absl::StrCat("--compute_threads=", compute_threads),
       "--max_job_memory_mb=0", "--metrics_port=-1"});
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return -1;
  }
  const pid_t pid = (*server)->pid();
  const int64_t idle_kb = load::ProcStatusKb(pid, "VmRSS").value_or(-1);
  const absl::Status st = call((*server)->target());
  const int64_t peak_kb = load::ProcStatusKb(pid, "VmHWM").value_or(-1);
  (*server)->Signal(SIGTERM);
  (void)(*server)->WaitExit();
  if (!st.ok()) {
    std::fprintf(stderr, "job failed: %s\n", st.ToString().c_str());
    return -1;
  }
  return (peak_kb - idle_kb) / 1024.0;
}

}  // namespace quantd::bench

#endif  // QUANTD_BENCH_SERVICE_ONE_JOB_PEAK_H_
