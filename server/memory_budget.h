// The default memory budget of admitted jobs (--max_job_memory_mb=-1).
#ifndef QUANTD_SERVER_MEMORY_BUDGET_H_
#define QUANTD_SERVER_MEMORY_BUDGET_H_

#include <cstdint>
#include <string>

namespace quantd::server {

// The memory this process may use, in bytes: the smallest of the machine's
// MemTotal (/proc/meminfo) and the cgroup limit (v2 memory.max, v1
// memory.limit_in_bytes) when one is set; 0 when none can be read.
int64_t MemoryLimitBytes();

// Same from given file contents (tests); an empty string means "absent".
int64_t MemoryLimitBytesFrom(const std::string& meminfo,
                             const std::string& cgroup_v2_max,
                             const std::string& cgroup_v1_limit);

// Three quarters of MemoryLimitBytes() in MiB: the rest holds the upload
// store, gRPC buffers and what the estimates miss. 1024 when the limit is
// unknown.
int64_t DefaultJobMemoryBudgetMb();

}  // namespace quantd::server

#endif  // QUANTD_SERVER_MEMORY_BUDGET_H_
