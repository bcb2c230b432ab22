// Bearer-token authentication: clients send `authorization: Bearer <token>`.
#ifndef QUANTD_SERVER_AUTH_H_
#define QUANTD_SERVER_AUTH_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quantd::server {

// Reads the token from a file (surrounding whitespace stripped); an empty
// token is an error.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// OK if `authorization` is "Bearer <expected>". The comparison takes the
// same time wherever the first difference is (digests of both sides are
// compared in constant time), so the token cannot be guessed byte by byte.
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
