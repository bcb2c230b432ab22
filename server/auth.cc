#include "server/auth.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/util/sha256.h"

namespace quantd::server {

absl::StatusOr<std::vector<std::string>> ReadTokenFile(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--auth_token_file: cannot read ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::vector<std::string> tokens;
  for (absl::string_view line : absl::StrSplit(buffer.str(), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) tokens.emplace_back(line);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_token_file: ", path, " is empty"));
  }
  return tokens;
}

absl::StatusOr<int> MatchBearerToken(absl::string_view authorization,
                                     const std::vector<std::string>& tokens) {
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
  // length and content; every token is compared.
  const std::string given = Sha256Hex(authorization.substr(kScheme.size()));
  int match = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string want = Sha256Hex(tokens[i]);
    if (CRYPTO_memcmp(given.data(), want.data(), want.size()) == 0) {
      match = static_cast<int>(i);
    }
  }
  if (match < 0) return absl::UnauthenticatedError("invalid bearer token");
  return match;
}

absl::Status CheckBearerToken(absl::string_view authorization,
                              absl::string_view expected) {
  return MatchBearerToken(authorization, {std::string(expected)}).status();
}

namespace {

X509* ParseFirstCertificate(absl::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return nullptr;
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

}  // namespace

bool SameCertificate(absl::string_view pem_a, absl::string_view pem_b) {
  X509* a = ParseFirstCertificate(pem_a);
  X509* b = ParseFirstCertificate(pem_b);
  const bool same = a != nullptr && b != nullptr && X509_cmp(a, b) == 0;
  X509_free(a);
  X509_free(b);
  return same;
}

absl::Status CheckClientCertificate(absl::string_view peer_cert_pem,
                                    absl::string_view own_cert_pem) {
  if (peer_cert_pem.empty() || own_cert_pem.empty()) return absl::OkStatus();
  if (SameCertificate(peer_cert_pem, own_cert_pem)) {
    return absl::UnauthenticatedError(
        "the client certificate is this server's own (--tls_cert); clients "
        "need a certificate of their own");
  }
  return absl::OkStatus();
}

}  // namespace quantd::server
