#include "server/process_stats.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::server {
namespace {

using ::testing::HasSubstr;

// Taken while the test binary initializes, so after the process started.
const absl::Time kSeenAtStartup = absl::Now();

constexpr int64_t kMiB = int64_t{1} << 20;

// /proc/self/statm: size and resident, in pages (a different file from the
// one the reader parses).
struct Statm {
  int64_t size_bytes = 0;
  int64_t resident_bytes = 0;
};
Statm ReadStatm() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  in >> size >> resident;
  const int64_t page = sysconf(_SC_PAGESIZE);
  return {size * page, resident * page};
}

// A line as Linux writes it, with a command name holding ") (" and spaces.
// utime=1234 stime=56 starttime=7890 vsize=123456789 rss=4321.
constexpr char kStatLine[] =
    "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 "
    "3 0 7890 123456789 4321 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 "
    "0 17 1 0 0 0 0 0\n";

TEST(ProcessStatsTest, ParsesStatFieldsAfterTheLastParenthesis) {
  auto stat = ParseProcPidStat(kStatLine);
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_EQ(stat->utime_ticks, 1234);
  EXPECT_EQ(stat->stime_ticks, 56);
  EXPECT_EQ(stat->start_ticks, 7890);
  EXPECT_EQ(stat->vsize_bytes, 123456789);
  EXPECT_EQ(stat->rss_pages, 4321);
}

TEST(ProcessStatsTest, TruncatedStatIsAnErrorNamingTheField) {
  auto stat = ParseProcPidStat("4242 (quantd) S 1 4242 4242 0 -1 4194560 100");
  ASSERT_FALSE(stat.ok());
  EXPECT_THAT(stat.status().message(), HasSubstr("field 14"));
  EXPECT_FALSE(ParseProcPidStat("no parenthesis").ok());
}

TEST(ProcessStatsTest, BootTimeIsTheBtimeLine) {
  auto btime = ParseBootTime(
      "cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5\nctxt 6\nbtime 1764000000\n"
      "processes 7\n");
  ASSERT_TRUE(btime.ok()) << btime.status();
  EXPECT_EQ(*btime, 1764000000);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").ok());
}

TEST(ProcessStatsTest, MemoryMatchesStatm) {
  // Touch 32 MiB so that resident memory is clearly above a bare process's.
  std::vector<char> block(32 * kMiB, 1);
  const Statm before = ReadStatm();
  auto stats = ReadProcessStats();
  const Statm after = ReadStatm();
  ASSERT_TRUE(stats.ok()) << stats.status();
  // Read between two statm reads; allow a few MiB of allocator movement.
  EXPECT_GE(stats->resident_memory_bytes,
            std::min(before.resident_bytes, after.resident_bytes) - 4 * kMiB);
  EXPECT_LE(stats->resident_memory_bytes,
            std::max(before.resident_bytes, after.resident_bytes) + 4 * kMiB);
  EXPECT_GE(stats->resident_memory_bytes, 32 * kMiB);
  EXPECT_GE(stats->virtual_memory_bytes,
            std::min(before.size_bytes, after.size_bytes) - 4 * kMiB);
  EXPECT_LE(stats->virtual_memory_bytes,
            std::max(before.size_bytes, after.size_bytes) + 4 * kMiB);
  EXPECT_GE(stats->virtual_memory_bytes, stats->resident_memory_bytes);
  EXPECT_EQ(block[block.size() / 2], 1);
}

TEST(ProcessStatsTest, OpenFdsGrowByOneForAnOpenedFile) {
  auto before = ReadProcessStats();
  ASSERT_TRUE(before.ok()) << before.status();
  const int fd = open("/proc/self/stat", O_RDONLY);
  ASSERT_GE(fd, 0);
  auto during = ReadProcessStats();
  close(fd);
  auto after = ReadProcessStats();
  ASSERT_TRUE(during.ok() && after.ok());
  EXPECT_EQ(during->open_fds, before->open_fds + 1);
  EXPECT_EQ(after->open_fds, before->open_fds);
  // stdin, stdout and stderr at least.
  EXPECT_GE(before->open_fds, 3);
}

TEST(ProcessStatsTest, MaxFdsIsTheSoftLimit) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit lowered = saved;
  lowered.rlim_cur =
      saved.rlim_cur == RLIM_INFINITY ? 1000 : saved.rlim_cur - 1;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  auto stats = ReadProcessStats();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->max_fds, static_cast<double>(lowered.rlim_cur));
}

double RusageCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

TEST(ProcessStatsTest, CpuSecondsFollowGetrusage) {
  // Burn about 0.2 s of CPU so that the figure is well above one tick.
  volatile double sink = 0;
  const double start = RusageCpuSeconds();
  while (RusageCpuSeconds() - start < 0.2) {
    for (int i = 0; i < 100000; ++i) sink = sink + std::sqrt(i);
  }
  const double before = RusageCpuSeconds();
  auto stats = ReadProcessStats();
  const double after = RusageCpuSeconds();
  ASSERT_TRUE(stats.ok()) << stats.status();
  // /proc counts whole clock ticks (10 ms at USER_HZ=100); getrusage is
  // finer; user and system time are each rounded. Allow three ticks.
  EXPECT_GE(stats->cpu_seconds, before - 0.03);
  EXPECT_LE(stats->cpu_seconds, after + 0.03);
  EXPECT_GE(stats->cpu_seconds, 0.2 - 0.02);
}

TEST(ProcessStatsTest, StartTimeIsBeforeThisTestInitialized) {
  auto stats = ReadProcessStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  const double seen = absl::ToDoubleSeconds(kSeenAtStartup - absl::UnixEpoch());
  // btime is whole seconds: the start may read up to 1 s late. The dynamic
  // loader and static initialization take well under a minute.
  EXPECT_LE(stats->start_time_seconds, seen + 1.0);
  EXPECT_GE(stats->start_time_seconds, seen - 60.0);
}

}  // namespace
}  // namespace quantd::server
