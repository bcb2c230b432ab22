#include "server/service_context.h"

#include "server/auth.h"

namespace quantd::server {

absl::Status ServiceContext::Authorize(
    const grpc::CallbackServerContext& ctx) const {
  if (!own_cert_pem.empty()) {
    if (auto auth = ctx.auth_context(); auth != nullptr) {
      for (const grpc::string_ref& pem :
           auth->FindPropertyValues("x509_pem_cert")) {
        absl::Status status = CheckClientCertificate(
            absl::string_view(pem.data(), pem.size()), own_cert_pem);
        if (!status.ok()) return status;
      }
    }
  }
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
