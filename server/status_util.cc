#include "server/status_util.h"

#include <string>

#include "server/client_metadata.h"

namespace quantd::server {

grpc::Status ToGrpcStatus(const absl::Status& status,
                          const LogFields& context) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // OK (0) is handled above; DO_NOT_USE and anything beyond UNAUTHENTICATED
  // (16) is not a code a client can act on.
  const grpc::StatusCode grpc_code =
      code > 0 && code <= static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)
          ? static_cast<grpc::StatusCode>(code)
          : grpc::StatusCode::UNKNOWN;
  std::string message = TruncateStatusMessage(status.message());
  if (message.size() != status.message().size()) {
    LogFields fields = context;
    fields.emplace_back("code", absl::StatusCodeToString(status.code()));
    fields.emplace_back("error", std::string(status.message()));
    Log(LogLevel::kWarning, "error message cut for the client", fields);
  }
  return grpc::Status(grpc_code, std::move(message));
}

}  // namespace quantd::server
