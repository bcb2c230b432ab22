// The one place where absl::Status becomes grpc::Status.
//
// absl::StatusCode and grpc::StatusCode share their numbering (both follow
// google.rpc.Code), so the code carries over as is; unknown values become
// UNKNOWN rather than an out-of-range enum. A message longer than
// kMaxStatusMessageBytes is cut for the client (client_metadata.h) and the
// whole text goes to the server log with `context` (request id, peer, ...).
#ifndef QUANTD_SERVER_STATUS_UTIL_H_
#define QUANTD_SERVER_STATUS_UTIL_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "server/json_log.h"

namespace quantd::server {

grpc::Status ToGrpcStatus(const absl::Status& status,
                          const LogFields& context = {});

}  // namespace quantd::server

#endif  // QUANTD_SERVER_STATUS_UTIL_H_
