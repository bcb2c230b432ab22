#include "core/runtime/cpu_count.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/util/proc_file.h"

namespace quantd {
namespace {

// ceil(quota / period) CPUs, or 0 when there is no quota (or it is not
// readable).
int64_t QuotaCpus(absl::string_view quota_text, absl::string_view period_text) {
  int64_t quota = 0, period = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(quota_text), &quota) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(period_text), &period) ||
      quota <= 0 || period <= 0) {
    return 0;  // v2 "max", v1 -1: no limit
  }
  return (quota + period - 1) / period;
}

// v2: "QUOTA PERIOD" on one line.
int64_t QuotaCpusV2(absl::string_view cpu_max) {
  std::vector<absl::string_view> parts = absl::StrSplit(
      absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipWhitespace());
  if (parts.size() != 2) return 0;
  return QuotaCpus(parts[0], parts[1]);
}

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace

int AvailableCpusFrom(int affinity, const std::string& cgroup_v2_cpu_max,
                      const std::string& cgroup_v1_quota,
                      const std::string& cgroup_v1_period) {
  int64_t cpus =
      affinity > 0 ? affinity
                   : static_cast<int64_t>(std::thread::hardware_concurrency());
  for (const int64_t quota : {QuotaCpusV2(cgroup_v2_cpu_max),
                              QuotaCpus(cgroup_v1_quota, cgroup_v1_period)}) {
    if (quota > 0) cpus = cpus > 0 ? std::min(cpus, quota) : quota;
  }
  return static_cast<int>(std::clamp<int64_t>(cpus, 1, 1 << 16));
}

int AvailableCpus() {
  return AvailableCpusFrom(
      AffinityCpus(), ReadProcFile("/sys/fs/cgroup/cpu.max"),
      ReadProcFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
      ReadProcFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
}

}  // namespace quantd
