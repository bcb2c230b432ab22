// SHA-256 as lowercase hex (OpenSSL's EVP), one-shot or incremental: the
// content digests of TPCs, uploads, results and output files.
#ifndef QUANTD_CORE_UTIL_SHA256_H_
#define QUANTD_CORE_UTIL_SHA256_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace quantd {

std::string Sha256Hex(absl::string_view data);

// True for 64 lowercase hex digits.
bool IsSha256Hex(absl::string_view text);

class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(absl::string_view data);
  // Digest of everything passed to Update; the hasher is spent afterwards.
  std::string FinishHex();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace quantd

#endif  // QUANTD_CORE_UTIL_SHA256_H_
