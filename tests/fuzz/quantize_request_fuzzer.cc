// QuantizeRequest validation (what the server runs before admission) and the
// admission memory estimate, on a serialized request; and what the server
// sends back from it: the request id as a header, the error as a status
// message (server/client_metadata.h).
#include <cstddef>
#include <cstdint>

#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/memory/job_memory.h"
#include "quantd/v1/job.pb.h"
#include "server/client_metadata.h"
#include "tests/fuzz/request_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using quantd::server::IsLegalMetadataValue;
  using quantd::server::MetadataSafe;
  // Any bytes a client sends as metadata (the header path needs no parse).
  const absl::string_view raw(reinterpret_cast<const char*>(data), size);
  if (!IsLegalMetadataValue(MetadataSafe(raw, 128))) __builtin_trap();
  quantd::v1::QuantizeRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (!IsLegalMetadataValue(MetadataSafe(request.request_id(), 128))) {
    __builtin_trap();
  }
  const quantd::JobLimits limits = quantd::fuzz::SmallJobLimits();
  // The server estimates only requests that passed validation.
  const absl::Status valid =
      quantd::ValidateQuantizeRequest(request, limits).status();
  quantd::fuzz::CheckStatusMessageFits(valid);
  if (!valid.ok()) return 0;
  // The estimate parses the model and infers its shapes: never negative.
  if (quantd::EstimateJobMemoryBytes(request, limits, 4) < 0) __builtin_trap();
  return 0;
}
