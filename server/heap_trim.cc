#include "server/heap_trim.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <atomic>
#include <cstddef>

namespace quantd::server {
namespace {

#ifdef __GLIBC__
// malloc_trim only when finished jobs left at least this much free in the
// heaps: trimming after every job cost small jobs the madvise calls and the
// next job the page faults of memory it had just handed back.
constexpr size_t kTrimFreeBytes = size_t{64} << 20;

// What the jobs finished since the last look reserved: the heaps cannot
// hold more free memory than that beyond what the last look saw, so
// mallinfo2 (which walks every free chunk of every arena, ~0.2 ms after a
// small job) runs only once this reaches kTrimFreeBytes.
std::atomic<int64_t> untrimmed_bytes{0};
#endif

}  // namespace

void TrimHeapAfterJob(int64_t job_reserved_bytes) {
#ifdef __GLIBC__
  const int64_t total =
      untrimmed_bytes.fetch_add(job_reserved_bytes) + job_reserved_bytes;
  if (total < static_cast<int64_t>(kTrimFreeBytes)) return;
  untrimmed_bytes.store(0);
  if (mallinfo2().fordblks >= kTrimFreeBytes) malloc_trim(0);
#else
  (void)job_reserved_bytes;
#endif
}

}  // namespace quantd::server
