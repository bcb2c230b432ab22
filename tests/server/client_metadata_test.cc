#include "server/client_metadata.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::server {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

// The bytes that made gRPC abort the server when copied into x-request-id.
TEST(MetadataSafeTest, EscapesEveryByteOutsidePrintableAscii) {
  // "è" is C3 A8 in UTF-8; \n = 0A, \t = 09, DEL = 7F; '%' itself is escaped
  // so that the original can be recovered.
  EXPECT_EQ(MetadataSafe("mod\xC3\xA8le-1\n\t\x7F%", 128),
            "mod%C3%A8le-1%0A%09%7F%25");
  EXPECT_EQ(MetadataSafe(std::string("a\0b", 3), 128), "a%00b");
}

TEST(MetadataSafeTest, KeepsPrintableAsciiAndCutsAtTheLimit) {
  EXPECT_EQ(MetadataSafe("job 42: ok", 128), "job 42: ok");
  EXPECT_EQ(MetadataSafe("abcdef", 3), "abc");
}

TEST(MetadataSafeTest, OutputIsAlwaysLegal) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  const std::string safe = MetadataSafe(every_byte, every_byte.size());
  EXPECT_TRUE(IsLegalMetadataValue(safe));
  EXPECT_FALSE(IsLegalMetadataValue(every_byte));
  // 95 printable bytes less '%' kept, the other 161 as three characters.
  EXPECT_EQ(safe.size(), 94 + 3 * 162);
}

TEST(TruncateStatusMessageTest, ShortMessagesAreUnchanged) {
  const std::string message(kMaxStatusMessageBytes, 'x');
  EXPECT_EQ(TruncateStatusMessage(message), message);
}

// A TPC with many validation errors: one error a line after the first.
TEST(TruncateStatusMessageTest, CutsWholeLinesAndCountsTheRest) {
  std::string message = "tpc: 200 errors:";
  for (int i = 0; i < 200; ++i) {
    absl::StrAppend(&message, "\n  operator set 'op", i,
                    "': attribute 'n_bits' must be in [1, 16]");
  }
  const std::string cut = TruncateStatusMessage(message);
  EXPECT_LE(cut.size(), kMaxStatusMessageBytes);
  EXPECT_THAT(cut, StartsWith("tpc: 200 errors:\n  operator set 'op0'"));
  // Every kept line is whole, and kept + dropped = all 200.
  const size_t kept = std::count(cut.begin(), cut.end(), '\n') - 1;
  EXPECT_THAT(cut,
              EndsWith(absl::StrCat("\n  ... (", 200 - kept, " more errors)")));
  EXPECT_THAT(
      cut, ::testing::HasSubstr(absl::StrCat("'op", kept - 1,
                                             "': attribute 'n_bits' must be in "
                                             "[1, 16]\n  ...")));
}

TEST(TruncateStatusMessageTest, CutsOneLongLineAtACharacterBoundary) {
  // A 100 KB name of two-byte characters echoed in a NOT_FOUND.
  std::string name;
  for (int i = 0; i < 50000; ++i) name += "\xC3\xA8";
  const std::string message = absl::StrCat("tpc '", name, "' not found");
  const std::string cut = TruncateStatusMessage(message);
  EXPECT_LE(cut.size(), kMaxStatusMessageBytes);
  EXPECT_THAT(cut, StartsWith("tpc '\xC3\xA8"));
  const size_t kept = cut.find(" ... (");
  ASSERT_NE(kept, std::string::npos);
  // "tpc '" is 5 bytes: the kept part ends after a whole character.
  EXPECT_EQ((kept - 5) % 2, 0u);
  EXPECT_THAT(cut, EndsWith(absl::StrCat(" ... (", message.size() - kept,
                                         " more bytes)")));
}

}  // namespace
}  // namespace quantd::server
