#include "core/util/sha256.h"

#include <openssl/evp.h>

namespace quantd {
namespace {

std::string ToHex(const unsigned char* bytes, unsigned int size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (unsigned int i = 0; i < size; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0xf]);
  }
  return hex;
}

}  // namespace

struct Sha256Hasher::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256Hasher::Sha256Hasher() : ctx_(std::make_unique<Ctx>()) {
  EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr);
}

Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::Update(absl::string_view data) {
  EVP_DigestUpdate(ctx_->md, data.data(), data.size());
}

std::string Sha256Hasher::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &size);
  return ToHex(digest, size);
}

std::string Sha256Hex(absl::string_view data) {
  Sha256Hasher hasher;
  hasher.Update(data);
  return hasher.FinishHex();
}

bool IsSha256Hex(absl::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

}  // namespace quantd
