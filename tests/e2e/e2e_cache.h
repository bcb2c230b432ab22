// Where the real-model tests find scripts/fetch_models.sh's models and
// samples: $QUANTD_CACHE_DIR, else $QUANTD_SOURCE_DIR/.cache, else ./.cache.
#ifndef QUANTD_TESTS_E2E_E2E_CACHE_H_
#define QUANTD_TESTS_E2E_E2E_CACHE_H_

#include <cstdlib>
#include <string>

namespace quantd::e2e {

inline std::string CacheDir() {
  const char* c = std::getenv("QUANTD_CACHE_DIR");
  if (c != nullptr && *c) return c;
  const char* s = std::getenv("QUANTD_SOURCE_DIR");
  return std::string(s != nullptr ? s : ".") + "/.cache";
}

}  // namespace quantd::e2e

#endif  // QUANTD_TESTS_E2E_E2E_CACHE_H_
