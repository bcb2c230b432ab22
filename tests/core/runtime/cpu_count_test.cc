#include "core/runtime/cpu_count.h"

#include <sched.h>

#include "gtest/gtest.h"

namespace quantd {
namespace {

TEST(AvailableCpus, AffinityAloneWhenNoQuota) {
  EXPECT_EQ(AvailableCpusFrom(8, "max 100000\n", "", ""), 8);
  EXPECT_EQ(AvailableCpusFrom(8, "", "-1\n", "100000\n"), 8);
  EXPECT_EQ(AvailableCpusFrom(8, "", "", ""), 8);
}

TEST(AvailableCpus, QuotaRoundsUpAndCapsTheAffinity) {
  // v2: 250000 us of every 100000 us = 2.5 CPUs -> 3.
  EXPECT_EQ(AvailableCpusFrom(64, "250000 100000\n", "", ""), 3);
  // v1: 400000 / 100000 = 4.
  EXPECT_EQ(AvailableCpusFrom(64, "", "400000\n", "100000\n"), 4);
  // A quota above the affinity leaves the affinity.
  EXPECT_EQ(AvailableCpusFrom(2, "800000 100000", "", ""), 2);
  // Half a CPU is still one thread.
  EXPECT_EQ(AvailableCpusFrom(16, "50000 100000", "", ""), 1);
}

TEST(AvailableCpus, MalformedFilesAreIgnored) {
  EXPECT_EQ(AvailableCpusFrom(4, "lots", "abc", "0"), 4);
  EXPECT_EQ(AvailableCpusFrom(4, "100000", "", ""), 4);  // no period
}

TEST(AvailableCpus, ThisProcessGetsAtMostItsAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cpus = AvailableCpus();
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, CPU_COUNT(&set));
}

}  // namespace
}  // namespace quantd
