#include "server/status_util.h"

#include <string>

namespace quantd::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // OK (0) is handled above; DO_NOT_USE and anything beyond UNAUTHENTICATED
  // (16) is not a code a client can act on.
  const grpc::StatusCode grpc_code =
      code > 0 && code <= static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)
          ? static_cast<grpc::StatusCode>(code)
          : grpc::StatusCode::UNKNOWN;
  return grpc::Status(grpc_code, std::string(status.message()));
}

}  // namespace quantd::server
