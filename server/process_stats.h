// The process's own resource use, read from Linux's /proc and getrlimit, as
// the standard Prometheus process collector reports it (process_* metrics:
// the Go and Python clients read the same fields).
#ifndef QUANTD_SERVER_PROCESS_STATS_H_
#define QUANTD_SERVER_PROCESS_STATS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quantd::server {

// The fields of /proc/<pid>/stat that the process collector needs.
struct ProcPidStat {
  int64_t utime_ticks = 0;  // user CPU time, in clock ticks
  int64_t stime_ticks = 0;  // system CPU time, in clock ticks
  int64_t start_ticks = 0;  // start time after boot, in clock ticks
  int64_t vsize_bytes = 0;  // virtual memory size
  int64_t rss_pages = 0;    // resident set size
};

// Parses the one line of /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and ')': fields are counted from the
// last ')'.
absl::StatusOr<ProcPidStat> ParseProcPidStat(absl::string_view text);

// The boot time (seconds since the Unix epoch) from /proc/stat's "btime".
absl::StatusOr<int64_t> ParseBootTime(absl::string_view proc_stat);

struct ProcessStats {
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  int64_t resident_memory_bytes = 0;
  int64_t virtual_memory_bytes = 0;
  int64_t open_fds = 0;
  double max_fds = 0;  // RLIMIT_NOFILE soft limit (+Inf when unlimited)
};

// This process's figures, read anew on each call. UNAVAILABLE when /proc
// cannot be read (not Linux, or /proc not mounted).
absl::StatusOr<ProcessStats> ReadProcessStats();

// Open file descriptors of this process (entries of /proc/self/fd, not
// counting the one opened to list them).
absl::StatusOr<int64_t> CountOpenFds();

}  // namespace quantd::server

#endif  // QUANTD_SERVER_PROCESS_STATS_H_
