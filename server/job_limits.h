// The server's --max_* flags as the core's per-job limits.
#ifndef QUANTD_SERVER_JOB_LIMITS_H_
#define QUANTD_SERVER_JOB_LIMITS_H_

#include <algorithm>
#include <cstdint>

#include "core/graph/onnx_import.h"
#include "core/pipeline/job/preflight.h"
#include "server/server_options.h"

namespace quantd::server {

inline JobLimits JobLimitsFor(const ServerOptions& o) {
  JobLimits limits;
  limits.max_model_bytes = o.max_model_mb << 20;
  limits.max_nodes = o.max_nodes;
  limits.max_tensor_elements = o.max_tensor_elements;
  limits.max_samples = o.max_samples;
  limits.max_sample_bytes = o.max_sample_mb << 20;
  return limits;
}

// The same limits for a job that imports a model without the pipeline's
// preflight (data generation).
inline ImportOptions ImportOptionsFor(const ServerOptions& o) {
  ImportOptions import;
  import.max_nodes = o.max_nodes;
  import.max_tensor_bytes =
      std::min<int64_t>(import.max_tensor_bytes, o.max_tensor_elements * 8);
  import.max_model_bytes = o.max_model_mb << 20;
  return import;
}

}  // namespace quantd::server

#endif  // QUANTD_SERVER_JOB_LIMITS_H_
