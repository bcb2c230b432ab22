#include "server/result_chunks.h"

#include <string>

#include "clients/cpp/result_assembler.h"
#include "core/util/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "quantd/v1/pruning.pb.h"

namespace quantd::server {
namespace {

using ::testing::HasSubstr;

v1::QuantizeResult BigResult() {
  v1::QuantizeResult result;
  result.set_qdq_onnx(std::string(10000, 'q'));
  result.set_report_json("{\"layers\": []}");
  result.set_tpc("imx500@4.0");
  return result;
}

TEST(ResultChunksTest, ChunkBytesLeaveRoomForTheEnvelope) {
  EXPECT_EQ(ResultChunkBytes(int64_t{4} << 20),
            (int64_t{4} << 20) - (64 << 10));
  // Never above 16 MiB, never below 1 KiB.
  EXPECT_EQ(ResultChunkBytes(int64_t{1} << 30), int64_t{16} << 20);
  EXPECT_EQ(ResultChunkBytes(100), 1024);
}

TEST(ResultChunksTest, SplitCoversTheBytesInOrder) {
  const std::string bytes = BigResult().SerializeAsString();
  const auto chunks = SplitResult(bytes, 4096);
  // ceil(size / 4096) chunks, offsets 0, 4096, ...
  ASSERT_EQ(chunks.size(), (bytes.size() + 4095) / 4096);
  std::string joined;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].offset(), static_cast<int64_t>(i * 4096));
    EXPECT_EQ(chunks[i].total_size(), static_cast<int64_t>(bytes.size()));
    EXPECT_EQ(chunks[i].sha256(), Sha256Hex(bytes));
    joined += chunks[i].data();
  }
  EXPECT_EQ(joined, bytes);
}

TEST(ResultChunksTest, ClientReassemblesTheResult) {
  const v1::QuantizeResult result = BigResult();
  client::ResultAssembler assembler;
  for (const auto& chunk : SplitResult(result.SerializeAsString(), 3000)) {
    ASSERT_TRUE(assembler.Add(chunk).ok());
  }
  auto back = assembler.Finish();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), result.SerializeAsString());
}

TEST(ResultChunksTest, ClientRejectsACorruptedChunk) {
  auto chunks = SplitResult(BigResult().SerializeAsString(), 3000);
  chunks[1].mutable_data()->at(0) ^= 1;
  client::ResultAssembler assembler;
  for (const auto& chunk : chunks) ASSERT_TRUE(assembler.Add(chunk).ok());
  EXPECT_THAT(std::string(assembler.Finish().status().message()),
              HasSubstr("sha256 mismatch"));
}

TEST(ResultChunksTest, ClientRejectsAMissingChunk) {
  auto chunks = SplitResult(BigResult().SerializeAsString(), 3000);
  client::ResultAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  const absl::Status status = assembler.Add(chunks[2]);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("offset"));
}

TEST(ResultChunksTest, ClientCapsTheClaimedSize) {
  v1::ResultChunk chunk;
  chunk.set_total_size(int64_t{1} << 40);
  client::ResultAssembler assembler(1 << 20);
  EXPECT_EQ(assembler.Add(chunk).code(), absl::StatusCode::kDataLoss);
}

// What the job reactor sends for a Prune result: one `result` event when it
// fits the max send size with the envelope, else chunk events the client
// reassembles into the same PruneResult.
TEST(ResultChunksTest, ResultEventsFitOneMessageOrChunk) {
  v1::PruneResult result;
  result.set_pruned_onnx(std::string(10000, 'p'));
  result.set_tpc("imx500@4.0");
  const int64_t fits = result.ByteSizeLong() + kEventEnvelopeBytes;
  const auto one = ResultEvents<v1::PruneEvent>(result, fits);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_TRUE(one[0].has_result());
  EXPECT_EQ(one[0].result().SerializeAsString(), result.SerializeAsString());

  // One byte less: chunks of size - 1 bytes (the max send size less the
  // envelope), so two events.
  const auto chunked = ResultEvents<v1::PruneEvent>(result, fits - 1);
  ASSERT_EQ(chunked.size(), 2u);
  client::ResultAssembler assembler;
  for (const v1::PruneEvent& e : chunked) {
    ASSERT_TRUE(e.has_result_chunk());
    ASSERT_TRUE(assembler.Add(e.result_chunk()).ok());
  }
  v1::PruneResult back;
  ASSERT_TRUE(assembler.FinishInto(&back).ok());
  EXPECT_EQ(back.SerializeAsString(), result.SerializeAsString());
}

}  // namespace
}  // namespace quantd::server
