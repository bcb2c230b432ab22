#include "server/memory_budget.h"

#include "gtest/gtest.h"

namespace quantd::server {
namespace {

constexpr char kMeminfo[] =
    "MemTotal:       24683520 kB\nMemFree:        20851712 kB\n";

TEST(MemoryLimitBytes, MemTotalWithoutCgroupLimit) {
  // 24683520 kB * 1024.
  EXPECT_EQ(MemoryLimitBytesFrom(kMeminfo, "max\n", ""), 25275924480);
}

TEST(MemoryLimitBytes, CgroupV2LimitBelowMemTotalWins) {
  EXPECT_EQ(MemoryLimitBytesFrom(kMeminfo, "4294967296\n", ""), 4294967296);
}

TEST(MemoryLimitBytes, CgroupV1UnlimitedIsIgnored) {
  // cgroup v1 says "no limit" with LLONG_MAX rounded down to a page.
  EXPECT_EQ(MemoryLimitBytesFrom(kMeminfo, "", "9223372036854771712\n"),
            25275924480);
}

TEST(MemoryLimitBytes, CgroupLimitAloneWhenMeminfoUnreadable) {
  EXPECT_EQ(MemoryLimitBytesFrom("", "", "1073741824"), 1073741824);
}

TEST(MemoryLimitBytes, NothingReadableIsZero) {
  EXPECT_EQ(MemoryLimitBytesFrom("", "", ""), 0);
  EXPECT_EQ(MemoryLimitBytesFrom("MemTotal: garbage\n", "max", "x"), 0);
}

TEST(DefaultJobMemoryBudgetMb, IsPositiveOnThisMachine) {
  // /proc/meminfo exists on Linux: 3/4 of a positive limit.
  EXPECT_GT(DefaultJobMemoryBudgetMb(), 0);
  EXPECT_LE(DefaultJobMemoryBudgetMb(), MemoryLimitBytes() >> 20);
}

}  // namespace
}  // namespace quantd::server
