#include "server/memory_budget.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/util/proc_file.h"

namespace quantd::server {
namespace {

// A cgroup limit file: a byte count, or "max" (v2) / a huge value (v1) for
// none. 0 = no limit.
int64_t ParseCgroupLimit(const std::string& text) {
  int64_t bytes = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &bytes)) return 0;
  // v1 reports "no limit" as a page-rounded LLONG_MAX.
  if (bytes <= 0 || bytes >= (int64_t{1} << 60)) return 0;
  return bytes;
}

int64_t ParseMemTotal(const std::string& meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return 0;
    int64_t kib = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib) || kib <= 0) {
      return 0;
    }
    return kib * 1024;
  }
  return 0;
}

}  // namespace

int64_t MemoryLimitBytesFrom(const std::string& meminfo,
                             const std::string& cgroup_v2_max,
                             const std::string& cgroup_v1_limit) {
  int64_t limit = ParseMemTotal(meminfo);
  for (const std::string* cgroup : {&cgroup_v2_max, &cgroup_v1_limit}) {
    const int64_t c = ParseCgroupLimit(*cgroup);
    if (c > 0) limit = limit > 0 ? std::min(limit, c) : c;
  }
  return limit;
}

int64_t MemoryLimitBytes() {
  return MemoryLimitBytesFrom(
      ReadProcFile("/proc/meminfo"), ReadProcFile("/sys/fs/cgroup/memory.max"),
      ReadProcFile("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
}

int64_t DefaultJobMemoryBudgetMb() {
  const int64_t limit = MemoryLimitBytes();
  if (limit <= 0) return 1024;
  return std::max<int64_t>(1, (limit / 4 * 3) >> 20);
}

}  // namespace quantd::server
