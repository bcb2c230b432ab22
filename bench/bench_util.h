// Small helpers every benchmark needs: process CPU time, FNV-1a digests (a
// digest that changes with any bit of an output, printed beside the timings
// so that a faster build shows it computed the same thing) and --name=VALUE
// flags.
#ifndef QUANTD_BENCH_BENCH_UTIL_H_
#define QUANTD_BENCH_BENCH_UTIL_H_

#include <time.h>

#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
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

// Uniform values in [-1, 1) from a 64-bit LCG: the benches' random inputs
// (untrained models: timing only), the same from the same state.
inline void FillUniform(absl::Span<float> values, uint64_t* state) {
  for (float& v : values) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>((*state >> 40) * (2.0 / (1 << 24)) - 1.0);
  }
}

// The value of `--name=VALUE` among the arguments, or `fallback`.
inline std::string StringFlag(int argc, char** argv, const std::string& name,
                              const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], prefix)) return argv[i] + prefix.size();
  }
  return fallback;
}

// StringFlag as an integer; `fallback` when absent or not a number.
inline int IntFlag(int argc, char** argv, const std::string& name,
                   int fallback) {
  int value = fallback;
  const std::string text = StringFlag(argc, argv, name, "");
  return !text.empty() && absl::SimpleAtoi(text, &value) ? value : fallback;
}

}  // namespace quantd::bench

#endif  // QUANTD_BENCH_BENCH_UTIL_H_
