// Checks that every job RPC (Quantize, Prune, GenerateData) applies to its
// request in the same way and words the same way: the request id, thread
// counts, and every enum and floating-point field, found by reflection so
// that a field added to a request is covered without a new check.
#ifndef QUANTD_CORE_UTIL_REQUEST_CHECKS_H_
#define QUANTD_CORE_UTIL_REQUEST_CHECKS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace quantd {

// Ids are echoed in every event and log line: bounded.
inline constexpr size_t kMaxRequestIdChars = 128;
// A thread count beyond this is a mistake, not a machine.
inline constexpr int kMaxNumThreads = 1024;

// "request_id: N characters, at most 128".
absl::Status CheckRequestId(absl::string_view request_id);

// `field` (e.g. "num_threads") in [0, kMaxNumThreads]; 0 is the default.
absl::Status CheckNumThreads(int num_threads, absl::string_view field);

// Every set field of `message`, nested and repeated ones too: an enum value
// its type does not define, or a NaN or infinite float or double, is
// INVALID_ARGUMENT naming the field's path
// ("mixed_precision.bit_width_overrides[0].target: 9 is not a value of
// quantd.v1.BitWidthOverride.Target"). Exceptions: +inf where it is the
// documented "off" (QuantizationConfig.z_threshold). Samples and TPCs are
// skipped: their own checks cover them (sample dtypes and NaN values, TPC
// validation).
absl::Status CheckEnumsAndNumbers(const google::protobuf::Message& message);

}  // namespace quantd

#endif  // QUANTD_CORE_UTIL_REQUEST_CHECKS_H_
