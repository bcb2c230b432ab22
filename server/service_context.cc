#include "server/service_context.h"

#include <grpc/grpc_security_constants.h>

#include "absl/strings/str_cat.h"
#include "core/util/sha256.h"
#include "server/auth.h"

namespace quantd::server {

absl::StatusOr<std::string> ServiceContext::Authenticate(
    const grpc::CallbackServerContext& ctx) const {
  std::string principal;
  if (!own_cert_pem.empty()) {
    if (auto auth = ctx.auth_context(); auth != nullptr) {
      for (const grpc::string_ref& pem :
           auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
        const absl::string_view text(pem.data(), pem.size());
        absl::Status status = CheckClientCertificate(text, own_cert_pem);
        if (!status.ok()) return status;
        principal = absl::StrCat("cert:", Sha256Hex(text));
      }
    }
  }
  if (auth_tokens.empty()) return principal;
  const auto& metadata = ctx.client_metadata();
  const auto found = metadata.find("authorization");
  const absl::string_view value =
      found == metadata.end()
          ? absl::string_view()
          : absl::string_view(found->second.data(), found->second.size());
  auto index = MatchBearerToken(value, auth_tokens);
  if (!index.ok()) return index.status();
  return absl::StrCat(principal, principal.empty() ? "" : ",",
                      "token:", *index);
}

}  // namespace quantd::server
