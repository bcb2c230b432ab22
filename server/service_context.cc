#include "server/service_context.h"

#include "server/auth.h"

namespace quantd::server {

absl::Status ServiceContext::Authorize(
    const grpc::CallbackServerContext& ctx) const {
  if (auth_token.empty()) return absl::OkStatus();
  const auto& metadata = ctx.client_metadata();
  const auto found = metadata.find("authorization");
  const absl::string_view value =
      found == metadata.end()
          ? absl::string_view()
          : absl::string_view(found->second.data(), found->second.size());
  return CheckBearerToken(value, auth_token);
}

}  // namespace quantd::server
