// SHA-256 (FIPS 180-4), for content digests of TPCs. Small and dependency
// free; not meant for secrets (no constant-time guarantees needed here).
#ifndef QUANTD_CORE_TPC_SHA256_H_
#define QUANTD_CORE_TPC_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace quantd::tpc {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  std::array<uint8_t, 32> Finish();

 private:
  void Block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_SHA256_H_
