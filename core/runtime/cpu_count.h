// The CPUs this process may use: what thread counts default to. A container
// sees the host's cores in std::thread::hardware_concurrency(); its CPU
// limit is the cgroup quota and its cpuset the affinity mask.
#ifndef QUANTD_CORE_RUNTIME_CPU_COUNT_H_
#define QUANTD_CORE_RUNTIME_CPU_COUNT_H_

#include <string>

namespace quantd {

// The smallest of the affinity mask's CPUs (sched_getaffinity; else
// hardware_concurrency) and the cgroup CPU quota rounded up (v2 cpu.max,
// v1 cpu.cfs_quota_us / cpu.cfs_period_us) when one is set; at least 1.
int AvailableCpus();

// Same from given values (tests): `affinity` CPUs (<= 0: unknown), the text
// of cpu.max ("max 100000" or "QUOTA PERIOD"), and of the v1 quota and
// period files; an empty string means the file is absent.
int AvailableCpusFrom(int affinity, const std::string& cgroup_v2_cpu_max,
                      const std::string& cgroup_v1_quota,
                      const std::string& cgroup_v1_period);

}  // namespace quantd

#endif  // QUANTD_CORE_RUNTIME_CPU_COUNT_H_
