#include "server/auth.h"

#include <openssl/crypto.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/sha256.h"

namespace quantd::server {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--auth_token_file: cannot read ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(buffer.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_token_file: ", path, " is empty"));
  }
  return token;
}

absl::Status CheckBearerToken(absl::string_view authorization,
                              absl::string_view expected) {
  constexpr absl::string_view kScheme = "Bearer ";
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing `authorization: Bearer <token>` metadata");
  }
  if (!absl::StartsWithIgnoreCase(authorization, kScheme)) {
    return absl::UnauthenticatedError(
        "authorization metadata must use the Bearer scheme");
  }
  // Equal-length digests make the comparison independent of the token's
  // length and content.
  const std::string given = Sha256Hex(authorization.substr(kScheme.size()));
  const std::string want = Sha256Hex(expected);
  if (CRYPTO_memcmp(given.data(), want.data(), want.size()) != 0) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

}  // namespace quantd::server
