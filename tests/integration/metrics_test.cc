// The /metrics families an operator expects of a production server: the
// standard process_* collector, capacity and the memory budget, the upload
// store, and per-stage job durations, scraped from the real quantd binary.
// Oracles: the server's /proc entries read by the test, the flags it was
// started with, the admission estimate computed in the test.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/memory/job_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"

namespace quantd::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

class MetricsTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args) {
    before_start_ = absl::Now();
    auto server = ServerProcess::Start(std::move(args));
    ASSERT_TRUE(server.ok()) << server.status();
    after_start_ = absl::Now();
    server_ = *std::move(server);
    auto client = client::Client::Create(
        {.target = server_->target(), .max_message_bytes = 256 << 20});
    ASSERT_TRUE(client.ok());
    client_ = *std::move(client);
  }

  std::string Scrape() {
    auto text = HttpGet(server_->metrics_port(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }
  double Metric(const std::string& series) {
    return MetricValue(Scrape(), series);
  }

  // /proc/<server>/statm resident size in bytes.
  int64_t ServerResidentBytes() {
    std::ifstream in(absl::StrCat("/proc/", server_->pid(), "/statm"));
    int64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
  }
  int64_t ServerOpenFds() {
    DIR* dir = opendir(absl::StrCat("/proc/", server_->pid(), "/fd").c_str());
    if (dir == nullptr) return -1;
    int64_t count = 0;
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    closedir(dir);
    return count;
  }

  absl::Time before_start_;
  absl::Time after_start_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(MetricsTest, ProcessCollectorSeriesMatchTheServersProcEntries) {
  StartServer({});
  if (HasFatalFailure()) return;
  const int64_t resident_before = ServerResidentBytes();
  const int64_t fds_before = ServerOpenFds();
  const std::string text = Scrape();
  const int64_t resident_after = ServerResidentBytes();
  const int64_t fds_after = ServerOpenFds();

  EXPECT_THAT(text, HasSubstr("# TYPE process_cpu_seconds_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE process_resident_memory_bytes gauge"));
  EXPECT_GE(MetricValue(text, "process_cpu_seconds_total"), 0);
  const double resident = MetricValue(text, "process_resident_memory_bytes");
  EXPECT_GE(resident, std::min(resident_before, resident_after) - 8 * kMiB);
  EXPECT_LE(resident, std::max(resident_before, resident_after) + 8 * kMiB);
  EXPECT_GE(MetricValue(text, "process_virtual_memory_bytes"), resident);
  // The scrape's own connection (and civetweb's) come and go: a few apart.
  const double fds = MetricValue(text, "process_open_fds");
  EXPECT_GE(fds, std::min(fds_before, fds_after) - 4);
  EXPECT_LE(fds, std::max(fds_before, fds_after) + 4);
  EXPECT_GE(fds, 3);
  // The server inherits this test's limit.
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(MetricValue(text, "process_max_fds"),
            static_cast<double>(limit.rlim_cur));
  // Started between the test's two clock reads (boot time is whole seconds).
  const double start = MetricValue(text, "process_start_time_seconds");
  EXPECT_GE(start, absl::ToUnixSeconds(before_start_) - 1.0);
  EXPECT_LE(start,
            absl::ToDoubleSeconds(after_start_ - absl::UnixEpoch()) + 1.0);
}

TEST_F(MetricsTest, CpuSecondsNeverDecrease) {
  StartServer({});
  if (HasFatalFailure()) return;
  const double first = Metric("process_cpu_seconds_total");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client_->GetServerInfo().ok());
  EXPECT_GE(Metric("process_cpu_seconds_total"), first);
  EXPECT_GE(first, 0);
}

TEST_F(MetricsTest, CapacityAndBudgetsAreTheFlags) {
  StartServer({"--workers=2", "--max_queued_jobs=3", "--max_job_memory_mb=512",
               "--upload_store_mb=64"});
  if (HasFatalFailure()) return;
  const std::string text = Scrape();
  EXPECT_EQ(MetricValue(text, "quantd_workers"), 2);
  EXPECT_EQ(MetricValue(text, "quantd_queue_capacity"), 3);
  EXPECT_EQ(MetricValue(text, "quantd_memory_budget_bytes"), 512 * kMiB);
  EXPECT_EQ(MetricValue(text, "quantd_memory_reserved_bytes"), 0);
  EXPECT_EQ(MetricValue(text, "quantd_upload_store_budget_bytes"), 64 * kMiB);
  EXPECT_EQ(MetricValue(text, "quantd_upload_store_bytes"), 0);
  EXPECT_EQ(MetricValue(text, "quantd_upload_store_reserved_bytes"), 0);
}

TEST_F(MetricsTest, UploadStoreBytesCountStoredUploads) {
  StartServer({});
  if (HasFatalFailure()) return;
  const std::string content(3 * kMiB + 5, 'u');
  auto receipt = client_->Upload(v1::UPLOAD_KIND_MODEL, content,
                                 absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(receipt.ok()) << receipt.status();
  const std::string text = Scrape();
  EXPECT_EQ(MetricValue(text, "quantd_upload_store_bytes"), content.size());
  EXPECT_EQ(MetricValue(text, "quantd_upload_store_reserved_bytes"), 0);
}

// While the job calibrates, its reservation is the admission estimate
// refined from the parsed model (server/quantize_rpc.cc): the larger of
// the estimate before import and the full one with compute threads + 1
// samples in flight. Once it is cancelled the budget is free again.
TEST_F(MetricsTest, MemoryReservedIsTheJobsEstimateWhileItRuns) {
  StartServer(
      {"--workers=1", "--compute_threads=1", "--max_job_memory_mb=4096"});
  if (HasFatalFailure()) return;
  const v1::QuantizeRequest request = LongJob("reserving");
  const int64_t expected = std::max(
      EstimateJobMemoryBytesBeforeImport(request, *ResolveJobSpec(request)),
      EstimateJobMemoryBytes(request, JobLimits{}, 2));
  client::CallCanceller canceller;
  std::string job_id;
  double reserved = -1, running = -1, queued = -1;
  auto result = client_->Quantize(
      request,
      [&](const v1::JobEvent& e) {
        if (e.has_accepted()) job_id = e.job_id();
        if (reserved < 0 && e.has_progress() &&
            e.progress().stage() == "calibrate") {
          const std::string text = Scrape();
          reserved = MetricValue(text, "quantd_memory_reserved_bytes");
          running = MetricValue(text, "quantd_workers_busy");
          queued = MetricValue(text, "quantd_queue_depth");
          canceller.Cancel();
        }
      },
      {.canceller = &canceller});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(reserved, expected);
  EXPECT_GT(reserved, 0);
  EXPECT_EQ(running, 1);
  EXPECT_EQ(queued, 0);
  ASSERT_FALSE(job_id.empty());
  auto finished = server_->WaitForLog(
      "job finished", {{"job_id", job_id}, {"status", "CANCELLED"}});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(Metric("quantd_memory_reserved_bytes"), 0);
}

// A quality target's trials are reserved as the job reaches them: a target
// met as configured reserves what the plain job does; one that runs every
// trial (out of reach, best effort) ends with the whole job's estimate
// (the "job finished" log's reserved_bytes, the most the job held).
TEST_F(MetricsTest, TargetTrialsAreReservedAsTheJobReachesThem) {
  StartServer(
      {"--workers=1", "--compute_threads=1", "--max_job_memory_mb=4096"});
  if (HasFatalFailure()) return;
  const v1::QuantizeRequest plain = SmallJob("plain");
  const auto reserved_by = [&](const v1::QuantizeRequest& r) -> int64_t {
    auto result = client_->Quantize(r);
    EXPECT_TRUE(result.ok()) << result.status();
    auto finished =
        server_->WaitForLog("job finished", {{"request_id", r.request_id()}});
    EXPECT_TRUE(finished.ok()) << finished.status();
    if (!finished.ok()) return -1;
    int64_t bytes = -1;
    EXPECT_TRUE(absl::SimpleAtoi(
        (*finished)["reserved_bytes"].get<std::string>(), &bytes));
    return bytes;
  };
  const int64_t before_import =
      EstimateJobMemoryBytesBeforeImport(plain, *ResolveJobSpec(plain));
  v1::QuantizeRequest met = plain;
  met.set_request_id("met");
  met.mutable_quality_target()->set_value(1);
  EXPECT_EQ(
      reserved_by(met),
      std::max(before_import, EstimateJobMemoryBytes(plain, JobLimits{}, 2)));
  v1::QuantizeRequest every = plain;
  every.set_request_id("every");
  every.mutable_quality_target()->set_value(200);
  every.mutable_quality_target()->set_best_effort(true);
  const int64_t whole = EstimateJobMemoryBytes(every, JobLimits{}, 2);
  EXPECT_GT(whole, EstimateJobMemoryBytes(plain, JobLimits{}, 2));
  EXPECT_EQ(reserved_by(every), std::max(before_import, whole));
}

// Every stage a job passed through has a histogram whose buckets run from
// 1 ms to 30 min.
TEST_F(MetricsTest, StageDurationsAreHistogramsFromOneMsToHalfAnHour) {
  StartServer({"--workers=1"});
  if (HasFatalFailure()) return;
  auto result = client_->Quantize(SmallJob("stages"));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("# TYPE quantd_job_duration_seconds histogram"));
  for (const char* stage : {"queued", "import", "calibrate", "export"}) {
    SCOPED_TRACE(stage);
    const std::string series = absl::StrCat(
        "quantd_job_duration_seconds_count{stage=\"", stage, "\"}");
    EXPECT_EQ(MetricValue(text, series), 1);
    for (const char* le : {"0.001", "1800", "+Inf"}) {
      EXPECT_GE(
          MetricValue(text, absl::StrCat("quantd_job_duration_seconds_bucket{"
                                         "stage=\"",
                                         stage, "\",le=\"", le, "\"}")),
          0)
          << le;
    }
    EXPECT_EQ(MetricValue(text, absl::StrCat("quantd_job_duration_seconds_"
                                             "bucket{stage=\"",
                                             stage, "\",le=\"+Inf\"}")),
              1);
  }
}

}  // namespace
}  // namespace quantd::testing
