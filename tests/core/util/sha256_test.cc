#include "core/util/sha256.h"

#include <string>

#include "gtest/gtest.h"

namespace quantd {
namespace {

// FIPS 180-4 / NIST CAVP example vectors.
TEST(Sha256Test, MatchesNistVectors) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalUpdatesEqualOneShot) {
  Sha256Hasher hasher;
  const std::string data(200, 'x');
  for (size_t i = 0; i < data.size(); i += 7) hasher.Update(data.substr(i, 7));
  EXPECT_EQ(hasher.FinishHex(), Sha256Hex(data));
}

TEST(Sha256Test, NoUpdateIsTheEmptyDigest) {
  Sha256Hasher hasher;
  EXPECT_EQ(hasher.FinishHex(), Sha256Hex(""));
}

TEST(Sha256Test, IsSha256HexAcceptsOnly64LowercaseHexDigits) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("abc")));
  EXPECT_FALSE(IsSha256Hex(""));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(65, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'A')));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'g')));
}

}  // namespace
}  // namespace quantd
