// What the request fuzz targets share: the job limits they validate under
// (small enough that no input makes a target allocate much, large enough
// for the seeds) and the bound on an error the server would send.
#ifndef QUANTD_TESTS_FUZZ_REQUEST_CHECKS_H_
#define QUANTD_TESTS_FUZZ_REQUEST_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/pipeline/job/preflight.h"
#include "server/client_metadata.h"

namespace quantd::fuzz {

inline JobLimits SmallJobLimits() {
  JobLimits limits;
  limits.max_model_bytes = int64_t{1} << 20;
  limits.max_nodes = 4096;
  limits.max_tensor_elements = int64_t{1} << 22;
  limits.max_samples = 64;
  limits.max_sample_bytes = int64_t{1} << 24;
  return limits;
}

// Traps unless `s`'s message, cut as the server cuts it, fits the bound.
inline void CheckStatusMessageFits(const absl::Status& s) {
  if (server::TruncateStatusMessage(s.message()).size() >
      server::kMaxStatusMessageBytes) {
    __builtin_trap();
  }
}

}  // namespace quantd::fuzz

#endif  // QUANTD_TESTS_FUZZ_REQUEST_CHECKS_H_
