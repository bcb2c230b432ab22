// QuantizeRequest validation (what the server runs before admission) and the
// admission memory estimate, on a serialized request.
#include <cstddef>
#include <cstdint>

#include "core/pipeline/quantize_job.h"
#include "quantd/v1/job.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  quantd::v1::QuantizeRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  quantd::JobLimits limits;
  limits.max_model_bytes = int64_t{1} << 20;
  limits.max_nodes = 4096;
  limits.max_tensor_elements = int64_t{1} << 22;
  limits.max_samples = 64;
  limits.max_sample_bytes = int64_t{1} << 24;
  // The server estimates only requests that passed validation.
  if (!quantd::ValidateQuantizeRequest(request, limits).ok()) return 0;
  // The estimate parses the model and infers its shapes: never negative.
  if (quantd::EstimateJobMemoryBytes(request, limits, 4) < 0) __builtin_trap();
  return 0;
}
