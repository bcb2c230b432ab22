#include "server/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace quantd::server {
namespace {

absl::StatusOr<std::string> ReadProcFile(const char* path) {
  // /proc files report size 0: read until EOF.
  std::ifstream in(path);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<ProcPidStat> ParseProcPidStat(absl::string_view text) {
  const size_t close = text.rfind(')');
  if (close == absl::string_view::npos) {
    return absl::InvalidArgumentError("/proc/<pid>/stat: no ')' after comm");
  }
  // Field 3 (state) is rest[0]; field n is rest[n - 3].
  const std::vector<absl::string_view> rest = absl::StrSplit(
      text.substr(close + 1), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  const auto field = [&rest](int n, int64_t* out) -> absl::Status {
    if (static_cast<int>(rest.size()) <= n - 3 ||
        !absl::SimpleAtoi(rest[n - 3], out)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "/proc/<pid>/stat: field ", n, " missing or not a number"));
    }
    return absl::OkStatus();
  };
  ProcPidStat stat;
  for (const auto& [n, out] :
       {std::pair{14, &stat.utime_ticks}, std::pair{15, &stat.stime_ticks},
        std::pair{22, &stat.start_ticks}, std::pair{23, &stat.vsize_bytes},
        std::pair{24, &stat.rss_pages}}) {
    if (absl::Status s = field(n, out); !s.ok()) return s;
  }
  return stat;
}

absl::StatusOr<int64_t> ParseBootTime(absl::string_view proc_stat) {
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    if (!absl::ConsumePrefix(&line, "btime ")) continue;
    int64_t btime = 0;
    if (absl::SimpleAtoi(line, &btime)) return btime;
    break;
  }
  return absl::InvalidArgumentError("/proc/stat: no btime line");
}

absl::StatusOr<int64_t> CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) {
    return absl::UnavailableError("cannot list /proc/self/fd");
  }
  const std::string own = absl::StrCat(dirfd(dir));
  int64_t count = 0;
  while (const dirent* entry = readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name == "." || name == ".." || name == own) continue;
    ++count;
  }
  closedir(dir);
  return count;
}

absl::StatusOr<ProcessStats> ReadProcessStats() {
  static const double kTicksPerSecond =
      static_cast<double>(sysconf(_SC_CLK_TCK));
  static const int64_t kPageSize = sysconf(_SC_PAGESIZE);
  auto stat_text = ReadProcFile("/proc/self/stat");
  if (!stat_text.ok()) return stat_text.status();
  auto stat = ParseProcPidStat(*stat_text);
  if (!stat.ok()) return stat.status();
  // Boot time does not change while we run.
  static const absl::StatusOr<int64_t> boot_time =
      []() -> absl::StatusOr<int64_t> {
    auto text = ReadProcFile("/proc/stat");
    if (!text.ok()) return text.status();
    return ParseBootTime(*text);
  }();
  if (!boot_time.ok()) return boot_time.status();
  auto fds = CountOpenFds();
  if (!fds.ok()) return fds.status();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::UnavailableError("getrlimit(RLIMIT_NOFILE) failed");
  }

  ProcessStats out;
  out.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) /
                    kTicksPerSecond;
  out.start_time_seconds =
      static_cast<double>(*boot_time) +
      static_cast<double>(stat->start_ticks) / kTicksPerSecond;
  out.resident_memory_bytes = stat->rss_pages * kPageSize;
  out.virtual_memory_bytes = stat->vsize_bytes;
  out.open_fds = *fds;
  out.max_fds = limit.rlim_cur == RLIM_INFINITY
                    ? std::numeric_limits<double>::infinity()
                    : static_cast<double>(limit.rlim_cur);
  return out;
}

}  // namespace quantd::server
