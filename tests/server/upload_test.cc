#include <memory>
#include <string>

#include "core/util/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/upload_assembler.h"
#include "server/upload_store.h"

namespace quantd::server {
namespace {

using ::testing::HasSubstr;

TEST(UploadAssemblerTest, ReassemblesInOrderChunks) {
  const std::string content = "hello, quantd";
  UploadAssembler assembler(1024);
  ASSERT_TRUE(assembler.Begin(1, content.size(), Sha256Hex(content)).ok());
  ASSERT_TRUE(assembler.Append(0, content.substr(0, 5)).ok());
  ASSERT_TRUE(assembler.Append(5, content.substr(5)).ok());
  auto data = assembler.Finish();
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(**data, content);
}

TEST(UploadAssemblerTest, ClaimedSizeOverCapIsRejectedBeforeAllocation) {
  UploadAssembler assembler(1024);
  const absl::Status status =
      assembler.Begin(1, int64_t{1} << 40, Sha256Hex("x"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("chunk[0].total_size: 1099511627776 bytes exceeds "
                        "the limit of 1024 bytes"));
}

TEST(UploadAssemblerTest, MissingKindAndBadDigestNameTheField) {
  UploadAssembler assembler(1024);
  EXPECT_THAT(std::string(assembler.Begin(0, 3, Sha256Hex("abc")).message()),
              HasSubstr("chunk[0].kind"));
  EXPECT_THAT(std::string(assembler.Begin(1, 3, "ABC").message()),
              HasSubstr("chunk[0].sha256"));
}

TEST(UploadAssemblerTest, GapOrOverlapIsRejected) {
  UploadAssembler assembler(1024);
  ASSERT_TRUE(assembler.Begin(1, 6, Sha256Hex("abcdef")).ok());
  ASSERT_TRUE(assembler.Append(0, "abc").ok());
  EXPECT_THAT(std::string(assembler.Append(4, "ef").message()),
              HasSubstr("chunk.offset: 4, expected 3"));
}

TEST(UploadAssemblerTest, MoreBytesThanClaimedIsRejected) {
  UploadAssembler assembler(1024);
  ASSERT_TRUE(assembler.Begin(1, 3, Sha256Hex("abc")).ok());
  EXPECT_EQ(assembler.Append(0, "abcd").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UploadAssemblerTest, TruncatedUploadIsRejected) {
  UploadAssembler assembler(1024);
  ASSERT_TRUE(assembler.Begin(1, 6, Sha256Hex("abcdef")).ok());
  ASSERT_TRUE(assembler.Append(0, "abc").ok());
  EXPECT_THAT(std::string(assembler.Finish().status().message()),
              HasSubstr("ended after 3 of 6 bytes"));
}

TEST(UploadAssemblerTest, DigestMismatchIsRejected) {
  UploadAssembler assembler(1024);
  ASSERT_TRUE(assembler.Begin(1, 3, Sha256Hex("abd")).ok());
  ASSERT_TRUE(assembler.Append(0, "abc").ok());
  EXPECT_THAT(std::string(assembler.Finish().status().message()),
              HasSubstr("content hashes to " + Sha256Hex("abc")));
}

class UploadStoreTest : public ::testing::Test {
 protected:
  UploadStore MakeStore(int64_t max_bytes) {
    return UploadStore({.max_bytes = max_bytes,
                        .ttl = absl::Minutes(10),
                        .clock = [this] { return now_; }});
  }
  static std::shared_ptr<const std::string> Bytes(int n) {
    return std::make_shared<const std::string>(n, 'x');
  }
  absl::Time now_ = absl::FromUnixSeconds(1000000);
};

TEST_F(UploadStoreTest, PutIsIdempotent) {
  UploadStore store = MakeStore(100);
  EXPECT_EQ(store.Put("k", 1, Bytes(10)).value(), false);
  EXPECT_EQ(store.Put("k", 1, Bytes(10)).value(), true);
  EXPECT_EQ(store.bytes(), 10);
  EXPECT_EQ(store.size(), 1);
}

TEST_F(UploadStoreTest, EvictsLeastRecentlyUsedToStayWithinBytes) {
  UploadStore store = MakeStore(100);
  ASSERT_TRUE(store.Put("a", 1, Bytes(40)).ok());
  ASSERT_TRUE(store.Put("b", 1, Bytes(40)).ok());
  ASSERT_TRUE(store.Get("a").ok());  // b is now the least recently used
  ASSERT_TRUE(store.Put("c", 1, Bytes(40)).ok());
  EXPECT_TRUE(store.Contains("a"));
  EXPECT_FALSE(store.Contains("b"));
  EXPECT_TRUE(store.Contains("c"));
  EXPECT_EQ(store.bytes(), 80);
  EXPECT_EQ(store.evictions(), 1);
}

TEST_F(UploadStoreTest, EntryExpiresAfterTtlWithoutUse) {
  UploadStore store = MakeStore(100);
  ASSERT_TRUE(store.Put("a", 1, Bytes(10)).ok());
  now_ += absl::Minutes(9);
  ASSERT_TRUE(store.Get("a").ok());  // use refreshes the TTL
  now_ += absl::Minutes(9);
  EXPECT_TRUE(store.Contains("a"));
  now_ += absl::Minutes(11);
  const auto gone = store.Get("a");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.bytes(), 0);
}

TEST_F(UploadStoreTest, ContentLargerThanStoreIsRejected) {
  UploadStore store = MakeStore(100);
  EXPECT_EQ(store.Put("a", 1, Bytes(101)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(UploadStoreTest, EvictedEntryStaysAliveForItsHolder) {
  UploadStore store = MakeStore(50);
  ASSERT_TRUE(store.Put("a", 1, Bytes(40)).ok());
  auto held = store.Get("a");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(store.Put("b", 1, Bytes(40)).ok());
  EXPECT_FALSE(store.Contains("a"));
  EXPECT_EQ(held->data->size(), 40u);
}

TEST_F(UploadStoreTest, UploadsInFlightCountAgainstTheBudget) {
  UploadStore store = MakeStore(100);
  auto first = store.Reserve(60);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(store.reserved_bytes(), 60);
  // 60 + 60 > 100: refused before any byte of it is kept.
  auto second = store.Reserve(60);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("uploads in flight hold 60 of the upload store's 100 "
                        "bytes (--upload_store_mb=0)"));
  first->reset();  // the upload failed or was abandoned
  EXPECT_EQ(store.reserved_bytes(), 0);
  EXPECT_TRUE(store.Reserve(60).ok());
}

TEST_F(UploadStoreTest, ReservationEvictsStoredEntriesButNotOtherUploads) {
  UploadStore store = MakeStore(100);
  ASSERT_TRUE(store.Put("a", 1, Bytes(50)).ok());
  auto reservation = store.Reserve(70);
  ASSERT_TRUE(reservation.ok());
  EXPECT_FALSE(store.Contains("a"));
  EXPECT_EQ(store.bytes() + store.reserved_bytes(), 70);
}

TEST_F(UploadStoreTest, PutTakesTheReservationsPlace) {
  UploadStore store = MakeStore(100);
  auto reservation = store.Reserve(80);
  ASSERT_TRUE(reservation.ok());
  ASSERT_TRUE(store.Put("a", 1, Bytes(80), *std::move(reservation)).ok());
  EXPECT_EQ(store.reserved_bytes(), 0);
  EXPECT_EQ(store.bytes(), 80);
  EXPECT_TRUE(store.Reserve(20).ok());
}

TEST_F(UploadStoreTest, SameBytesAsAnotherKindAreUsableAsBoth) {
  UploadStore store = MakeStore(100);
  ASSERT_EQ(store.Put("k", 2, Bytes(10)).value(), false);  // SAMPLES
  ASSERT_EQ(store.Put("k", 1, Bytes(10)).value(), true);   // MODEL
  auto entry = store.Get("k");
  ASSERT_TRUE(entry.ok());
  EXPECT_TRUE(entry->has_kind(1));
  EXPECT_TRUE(entry->has_kind(2));
  EXPECT_EQ(entry->first_kind(), 1);
}

TEST(UploadAssemblerTest, UnknownKindIsRejected) {
  UploadAssembler assembler(1024);
  EXPECT_THAT(std::string(assembler.Begin(99, 3, Sha256Hex("abc")).message()),
              HasSubstr("chunk[0].kind: 99 is not UPLOAD_KIND_MODEL (1) or "
                        "UPLOAD_KIND_SAMPLES (2)"));
}

TEST_F(UploadStoreTest, SpacesKeepClientsApart) {
  UploadStore store = MakeStore(100);
  ASSERT_EQ(store.Put("k", 1, Bytes(10), nullptr, "token:0").value(), false);
  EXPECT_TRUE(store.Contains("k", "token:0"));
  EXPECT_FALSE(store.Contains("k", "token:1"));
  EXPECT_FALSE(store.Contains("k"));
  // The other client's copy is its own entry; the budget is shared.
  ASSERT_EQ(store.Put("k", 1, Bytes(10), nullptr, "token:1").value(), false);
  EXPECT_EQ(store.bytes(), 20);
  const auto missing = store.Get("k", "token:2");
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("no upload with sha256 k "));
}

}  // namespace
}  // namespace quantd::server
