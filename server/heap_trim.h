// Gives the heap memory that finished jobs freed back to the system: glibc
// keeps it in its arenas otherwise, and an idle server's RSS would stay at
// its last job's peak (the load test measured 750 MiB held after a run).
#ifndef QUANTD_SERVER_HEAP_TRIM_H_
#define QUANTD_SERVER_HEAP_TRIM_H_

#include <cstdint>

namespace quantd::server {

// Called when a job ends with what admission had reserved for it; trims the
// heaps once the jobs since the last trim may have left kTrimFreeBytes free.
void TrimHeapAfterJob(int64_t job_reserved_bytes);

}  // namespace quantd::server

#endif  // QUANTD_SERVER_HEAP_TRIM_H_
