// The one place where text that a client chose (request ids, names it sent)
// becomes gRPC metadata or a status message sent back to it.
//
// gRPC asserts, and so aborts the process, on a non-binary metadata value
// with a byte outside printable ASCII (0x20..0x7E). Clients also refuse
// metadata past their limit (8 KiB by default), and a status message travels
// as metadata (grpc-message), so a long error would reach the client as an
// unrelated RESOURCE_EXHAUSTED.
#ifndef QUANTD_SERVER_CLIENT_METADATA_H_
#define QUANTD_SERVER_CLIENT_METADATA_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace quantd::server {

// A status message of at most this many bytes reaches any client intact.
inline constexpr size_t kMaxStatusMessageBytes = 4096;

// `value` as a legal metadata value: '%' and every byte outside 0x20..0x7E
// become %XX (upper-case hex), so the original is recoverable; at most
// `max_bytes` of the input are used.
std::string MetadataSafe(absl::string_view value, size_t max_bytes);

// True if every byte of `value` may stand in a non-binary metadata value.
bool IsLegalMetadataValue(absl::string_view value);

// `message` cut to at most kMaxStatusMessageBytes: at the last line break
// that fits (validation lists one error a line), ending
// "... (N more errors)" when whole lines were dropped, or
// "... (N more bytes)" otherwise. Unchanged when it fits.
std::string TruncateStatusMessage(absl::string_view message);

}  // namespace quantd::server

#endif  // QUANTD_SERVER_CLIENT_METADATA_H_
