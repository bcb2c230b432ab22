// The one place where absl::Status becomes grpc::Status.
//
// absl::StatusCode and grpc::StatusCode share their numbering (both follow
// google.rpc.Code), so the code carries over as is; unknown values become
// UNKNOWN rather than an out-of-range enum.
#ifndef QUANTD_SERVER_STATUS_UTIL_H_
#define QUANTD_SERVER_STATUS_UTIL_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace quantd::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace quantd::server

#endif  // QUANTD_SERVER_STATUS_UTIL_H_
