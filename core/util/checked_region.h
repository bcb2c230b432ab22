// Range checks for the few innermost numeric loops that opt out of
// AddressSanitizer's per-access instrumentation (QUANTD_UNCHECKED_ACCESSES):
// under ASan every load and store of such a loop is checked, and UBSan
// checks its pointer arithmetic, each time, which made a 5x5 depthwise row
// ~40% of the real-model tests. The loop instead checks, once, the regions
// that all its accesses lie in (CheckRegion) and asserts the index bounds
// that keep them there: the same addresses are checked, once per row.
// Without ASan both are no-ops.
#ifndef QUANTD_CORE_UTIL_CHECKED_REGION_H_
#define QUANTD_CORE_UTIL_CHECKED_REGION_H_

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QUANTD_ASAN 1
#endif
#endif
#if !defined(QUANTD_ASAN) && defined(__SANITIZE_ADDRESS__)
#define QUANTD_ASAN 1
#endif

#ifdef QUANTD_ASAN
#include <sanitizer/asan_interface.h>
// No per-access ASan checks, and no UBSan checks of pointers (null,
// alignment, overflow) in this function; integer and float checks stay.
#define QUANTD_UNCHECKED_ACCESSES \
  __attribute__((                 \
      no_sanitize("address", "pointer-overflow", "alignment", "null")))
#else
#define QUANTD_UNCHECKED_ACCESSES
#endif

namespace quantd {

// Under ASan: whether all of [p, p + bytes) may be accessed; on the first
// byte that may not, an instrumented read of it makes ASan report it (with
// the caller's stack) and stop.
inline void CheckRegion(const void* p, size_t bytes) {
#ifdef QUANTD_ASAN
  if (bytes == 0) return;
  if (const void* bad =
          __asan_region_is_poisoned(const_cast<void*>(p), bytes)) {
    (void)*static_cast<const volatile char*>(bad);
  }
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace quantd

#endif  // QUANTD_CORE_UTIL_CHECKED_REGION_H_
