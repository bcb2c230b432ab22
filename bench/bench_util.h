// Small helpers every benchmark needs: process CPU time and FNV-1a digests
// (a digest that changes with any bit of an output, printed beside the
// timings so that a faster build shows it computed the same thing).
#ifndef QUANTD_BENCH_BENCH_UTIL_H_
#define QUANTD_BENCH_BENCH_UTIL_H_

#include <time.h>

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace quantd::bench {

// CPU seconds of the whole process (every thread), since it started.
inline double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * t.tv_nsec;
}

// FNV-1a 64 of `bytes`, continuing from `h`.
inline uint64_t Fnv1a(absl::string_view bytes,
                      uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// The digest of a job's report.json without its timings: its float figures
// change with any bit of any evaluated activation. 0 when it does not parse.
inline uint64_t ReportDigest(const std::string& report_json) {
  nlohmann::json j = nlohmann::json::parse(report_json, nullptr, false);
  if (j.is_discarded()) return 0;
  j.erase("timings_seconds");
  return Fnv1a(j.dump());
}

}  // namespace quantd::bench

#endif  // QUANTD_BENCH_BENCH_UTIL_H_
