// Hostile waves (loopback only) against what quantd holds before a job is
// admitted: unfinished uploads, models larger than the job budget and
// inline TPC JSON over --max_tpc_json_kb, each from many clients at once.
// Asserts that every attacker is refused with a status naming the limit and
// that the server's peak RSS during each wave stays within what the flags
// allow: --upload_store_mb for uploads; for whole requests
// --max_receive_memory_mb (gRPC's receive buffers) twice, since each request
// the quota let in is deserialized once more for its handler, plus one
// message. gRPC's quota refuses with RESOURCE_EXHAUSTED (streams cut) or
// UNAVAILABLE (idle connections sent GOAWAY), both retryable.
// The figures are printed for docs/reliability.md.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"
#include "tests/load/hostile_waves.h"
#include "tests/load/load_runner.h"

namespace quantd::load {
namespace {

using ::quantd::testing::ServerProcess;
using ::testing::HasSubstr;

#ifdef QUANTD_SANITIZED
constexpr int64_t kSlackMb = 320;  // ASan's quarantine and shadow
// Under ASan, 30 whole requests of 20-54 MiB leave 700-1000 MiB resident
// (its allocator neither reuses those blocks across size classes nor gives
// them back; a 16 MiB quarantine changed nothing): RSS then measures ASan,
// not the server. The plain tree asserts those bounds (ctest -L load in
// build/; docs/reliability.md has the figures); here only the codes.
constexpr bool kWholeRequestRssIsTheServers = false;
#else
constexpr int64_t kSlackMb = 64;
constexpr bool kWholeRequestRssIsTheServers = true;
#endif
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kStoreMb = 50, kReceiveMb = 128, kJobBudgetMb = 300;
constexpr int64_t kMessageMb = 64;
constexpr int64_t kWholeRequestsBoundMb =
    2 * kReceiveMb + kMessageMb + kSlackMb;

class HostileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = ServerProcess::Start(
        {"--workers=1", "--max_queued_jobs=2",
         absl::StrCat("--max_message_mb=", kMessageMb),
         absl::StrCat("--upload_store_mb=", kStoreMb),
         absl::StrCat("--max_receive_memory_mb=", kReceiveMb),
         absl::StrCat("--max_job_memory_mb=", kJobBudgetMb),
         "--max_tpc_json_kb=1024"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
    auto pid = FindChild("quantd");
    ASSERT_TRUE(pid.ok()) << pid.status();
    pid_ = *pid;
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      server_->Signal(SIGTERM);
      EXPECT_TRUE(server_->WaitExit().ok());
    }
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }

  static ServerProcess* server_;
  static pid_t pid_;
};
ServerProcess* HostileTest::server_ = nullptr;
pid_t HostileTest::pid_ = 0;

int64_t GrowthMb(const WaveReport& r) {
  return (r.peak_kb - r.before_kb) >> 10;
}

TEST_F(HostileTest, UnfinishedUploadsStayWithinTheUploadStore) {
  // 10 x 20 MiB claimed, 19 MiB sent each: two fit the 50 MiB store.
  auto report =
      UnfinishedUploadsWave(server_->target(), pid_, 10, 20 * kMiB, 19 * kMiB);
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("hostile: %s\n", report->ToString().c_str());
  EXPECT_EQ(report->codes["RESOURCE_EXHAUSTED"], 8) << report->ToString();
  EXPECT_EQ(report->codes["CANCELLED"], 2) << report->ToString();
  EXPECT_THAT(report->messages["RESOURCE_EXHAUSTED"],
              HasSubstr("(--upload_store_mb=50)"));
  EXPECT_LE(GrowthMb(*report), kStoreMb + kReceiveMb + kSlackMb)
      << report->ToString();
}

TEST_F(HostileTest, UploadsClaimingMoreThanTheStoreAreRefusedAtOnce) {
  // The figure: 10 x 100 MiB unfinished with a 50 MiB store.
  auto report =
      UnfinishedUploadsWave(server_->target(), pid_, 10, 100 * kMiB, 60 * kMiB);
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("hostile: %s\n", report->ToString().c_str());
  EXPECT_EQ(report->codes["RESOURCE_EXHAUSTED"], 10) << report->ToString();
  EXPECT_LE(GrowthMb(*report), kReceiveMb + kSlackMb) << report->ToString();
}

TEST_F(HostileTest, ModelsLargerThanTheBudgetAreRefusedUnparsed) {
  // 1024 x 1536 x 3 x 3 floats: a valid 54 MiB model, estimated at
  // 9 x 54 + 8 MiB > the 300 MiB budget before it is parsed.
  const v1::QuantizeRequest request =
      testing::ConvJob(1024, 4, 1536, 1, "oversized");
  auto report = QuantizeWave(
      absl::StrCat("30 Quantize calls with a ",
                   request.onnx_model().size() >> 20, " MiB model"),
      server_->target(), pid_, 30, request);
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("hostile: %s\n", report->ToString().c_str());
  // gRPC's quota may also cut streams that are still arriving.
  EXPECT_EQ(report->codes["FAILED_PRECONDITION"] +
                report->codes["RESOURCE_EXHAUSTED"] +
                report->codes["UNAVAILABLE"],
            30)
      << report->ToString();
  if (report->codes["FAILED_PRECONDITION"] > 0) {
    EXPECT_THAT(report->messages["FAILED_PRECONDITION"],
                HasSubstr("more than the whole budget (--max_job_memory_mb"));
  }
  if (kWholeRequestRssIsTheServers) {
    EXPECT_LE(GrowthMb(*report), kWholeRequestsBoundMb) << report->ToString();
  }
}

TEST_F(HostileTest, HugeTpcJsonIsRefusedUnparsed) {
  v1::QuantizeRequest request = testing::SmallJob("json");
  // 20 MiB of valid-looking JSON: parsing it cost ~420 MiB.
  std::string json = "{\"padding\": [";
  while (json.size() < (20 << 20)) json += "1.0,";
  json += "1.0]}";
  request.mutable_tpc()->set_inline_json(json);
  auto report = QuantizeWave("30 Quantize calls with 20 MiB TPC JSON",
                             server_->target(), pid_, 30, request);
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("hostile: %s\n", report->ToString().c_str());
  EXPECT_EQ(report->codes["INVALID_ARGUMENT"] +
                report->codes["RESOURCE_EXHAUSTED"] +
                report->codes["UNAVAILABLE"],
            30)
      << report->ToString();
  if (report->codes["INVALID_ARGUMENT"] > 0) {
    EXPECT_THAT(report->messages["INVALID_ARGUMENT"],
                HasSubstr("(--max_tpc_json_kb=1024)"));
  }
  if (kWholeRequestRssIsTheServers) {
    EXPECT_LE(GrowthMb(*report), kWholeRequestsBoundMb) << report->ToString();
  }
}

}  // namespace
}  // namespace quantd::load
