// How many samples (and training epochs) the real-model tests use.
//
// The plain build runs them at full scale: the accuracy figures of
// docs/pipeline.md, docs/gptq.md and docs/mixed_precision.md. The sanitizer
// tree (the test command's ASan+UBSan run, QUANTD_SANITIZED) runs the same
// code paths on fewer samples, 3-10x slower per sample, so the whole suite
// fits CI's budget. The PTQ classifier test keeps its full sample count
// everywhere (its 99 % top-1 target needs it). QUANTD_E2E_FULL_SCALE=1
// forces full scale anywhere.
#ifndef QUANTD_TESTS_E2E_E2E_SCALE_H_
#define QUANTD_TESTS_E2E_E2E_SCALE_H_

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace quantd::e2e {

inline bool FullScale() {
  const char* v = std::getenv("QUANTD_E2E_FULL_SCALE");
  if (v != nullptr && *v != '\0') return std::strcmp(v, "0") != 0;
#ifdef QUANTD_SANITIZED
  return false;
#else
  return true;
#endif
}

// `full` at full scale, else `light`.
inline size_t Scaled(size_t full, size_t light) {
  return FullScale() ? full : light;
}

}  // namespace quantd::e2e

#endif  // QUANTD_TESTS_E2E_E2E_SCALE_H_
