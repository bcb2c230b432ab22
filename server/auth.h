// Bearer-token authentication: clients send `authorization: Bearer <token>`.
#ifndef QUANTD_SERVER_AUTH_H_
#define QUANTD_SERVER_AUTH_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quantd::server {

// Reads the tokens from a file, one per line (surrounding whitespace
// stripped, blank lines skipped); a file without any is an error. Each token
// is its own client identity (e.g. its own namespace of uploads).
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

// Index in `tokens` of the token `authorization` carries ("Bearer <token>").
// Every token is compared, each in the same time wherever the first
// difference is (digests of both sides are compared in constant time), so a
// token cannot be guessed byte by byte. UNAUTHENTICATED otherwise.
absl::StatusOr<int> MatchBearerToken(absl::string_view authorization,
                                     const std::vector<std::string>& tokens);

// OK if `authorization` is "Bearer <expected>" (MatchBearerToken of one).
absl::Status CheckBearerToken(absl::string_view authorization,
                              absl::string_view expected);

// True if the first certificates of both PEM texts are the same certificate
// (compared as DER, so line breaks and chains do not matter); false when
// either does not parse.
bool SameCertificate(absl::string_view pem_a, absl::string_view pem_b);

// OK unless the peer presented `own_cert_pem` (the server's own certificate)
// as its client certificate: mutual TLS trusts every certificate of the
// client CA, which usually signed the server's too.
absl::Status CheckClientCertificate(absl::string_view peer_cert_pem,
                                    absl::string_view own_cert_pem);

}  // namespace quantd::server

#endif  // QUANTD_SERVER_AUTH_H_
