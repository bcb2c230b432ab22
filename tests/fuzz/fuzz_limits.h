// The job limits the request fuzz targets validate under: small enough that
// no input makes a target allocate much, large enough for the seeds.
#ifndef QUANTD_TESTS_FUZZ_FUZZ_LIMITS_H_
#define QUANTD_TESTS_FUZZ_FUZZ_LIMITS_H_

#include <cstdint>

#include "core/pipeline/job/preflight.h"

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

}  // namespace quantd::fuzz

#endif  // QUANTD_TESTS_FUZZ_FUZZ_LIMITS_H_
