// Full quantization jobs through the real quantd binary: identical results
// to the in-process pipeline, event order, cancellation by disconnect and by
// deadline, queue-full rejection and chunked results. Skipped (with a
// message) while the server is built without the pipeline.
#include <signal.h>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "clients/cpp/client.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/memory/job_memory.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/tpc_catalog.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"

namespace quantd::testing {
namespace {

using ::testing::HasSubstr;

// The result's bytes with the one wall-clock field (the per-stage timings in
// report.json and report.html) removed, serialized deterministically (map
// fields in key order). Everything else must match byte for byte.
std::string CanonicalBytes(v1::QuantizeResult result) {
  nlohmann::json report = nlohmann::json::parse(result.report_json());
  report.erase("timings_seconds");
  result.set_report_json(report.dump());
  std::string html = result.report_html();
  const size_t begin = html.find("<h2>Timings</h2>");
  if (begin != std::string::npos) {
    const size_t end = html.find("</table>", begin);
    html.erase(begin,
               end == std::string::npos ? std::string::npos : end + 8 - begin);
  }
  result.set_report_html(html);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    result.SerializeToCodedStream(&coded);
  }
  return bytes;
}

class JobsTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args) {
    auto server = ServerProcess::Start(std::move(args));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    auto client = client::Client::Create(
        {.target = server_->target(), .max_message_bytes = 256 << 20});
    ASSERT_TRUE(client.ok());
    client_ = *std::move(client);
    auto info = client_->GetServerInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_TRUE(info->quantize_available());
  }
  double Metric(const std::string& series) {
    auto text = HttpGet(server_->metrics_port(), "/metrics");
    return text.ok() ? MetricValue(*text, series) : -2;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
};

absl::StatusOr<v1::QuantizeResult> InProcess(const v1::QuantizeRequest& r) {
  auto catalog = server::TpcCatalog::Create("");
  if (!catalog.ok()) return catalog.status();
  ThreadPool pool(2);
  CancellationToken token;
  NullProgressSink progress;
  JobContext context;
  context.registry = (*catalog)->registry();
  context.pool = &pool;
  context.cancel = &token;
  context.progress = &progress;
  return RunQuantizeJob(r, context);
}

TEST_F(JobsTest, ResultEqualsInProcessRunAndEventsAreOrdered) {
  StartServer({"--workers=2"});
  if (HasFatalFailure() || IsSkipped()) return;
  const v1::QuantizeRequest request = SmallJob("same-bytes");
  std::vector<v1::JobEvent> events;
  auto remote = client_->Quantize(
      request, [&](const v1::JobEvent& e) { events.push_back(e); });
  ASSERT_TRUE(remote.ok()) << remote.status();
  ASSERT_GE(events.size(), 2u);
  EXPECT_TRUE(events.front().has_accepted());
  EXPECT_EQ(events.front().accepted().tpc(), "imx500@4.0");
  EXPECT_TRUE(events.back().has_result());
  for (size_t i = 1; i + 1 < events.size(); ++i) {
    EXPECT_FALSE(events[i].has_accepted() || events[i].has_result()) << i;
    EXPECT_EQ(events[i].job_id(), events.front().job_id());
    EXPECT_EQ(events[i].request_id(), "same-bytes");
  }
  auto local = InProcess(request);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(CanonicalBytes(*remote), CanonicalBytes(*local));
  EXPECT_EQ(Metric("quantd_jobs_total{status=\"ok\"}"), 1);
}

// One TPC resolution: the Accepted event, the result and the in-process run
// name an inline TPC without a version alike.
TEST_F(JobsTest, InlineTpcIsNamedAlikeInAcceptedAndResult) {
  StartServer({});
  if (HasFatalFailure() || IsSkipped()) return;
  auto catalog = server::TpcCatalog::Create("");
  ASSERT_TRUE(catalog.ok());
  auto builtin = (*catalog)->registry()->Resolve("imx500@4.0");
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  v1::QuantizeRequest request = SmallJob("inline-tpc");
  v1::TargetPlatformCapabilities* tpc =
      request.mutable_tpc()->mutable_inline_tpc();
  *tpc = **builtin;
  tpc->set_name("my_board");
  tpc->clear_version();
  std::string accepted;
  auto remote = client_->Quantize(request, [&](const v1::JobEvent& e) {
    if (e.has_accepted()) accepted = e.accepted().tpc();
  });
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ(accepted, "my_board@inline");
  EXPECT_EQ(remote->tpc(), "my_board@inline");
  auto local = InProcess(request);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->tpc(), "my_board@inline");
}

// Admission before the import counts what is known unparsed (8 MiB + the
// 4 MiB sample x4.5): it fits 100 MiB. The worker's import then finds
// 16 x 1024 x 1024 float activations (64 MiB, x1.35 for the one sample):
// 112 MiB, more than the whole budget, after Accepted.
TEST_F(JobsTest, EstimateFromTheParsedModelEndsAJobThatCannotFit) {
  StartServer({"--max_job_memory_mb=100"});
  if (HasFatalFailure() || IsSkipped()) return;
  bool accepted = false;
  auto result = client_->Quantize(ConvJob(1, 1024, 16, 1, "too-big"),
                                  [&](const v1::JobEvent& e) {
                                    if (e.has_accepted()) accepted = true;
                                  });
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(accepted);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("--max_job_memory_mb=100"));
  // The server goes on: a small job still runs.
  EXPECT_TRUE(client_->Quantize(SmallJob("after"), nullptr).ok());
}

TEST_F(JobsTest, LargeResultArrivesInVerifiedChunks) {
  StartServer({"--max_message_mb=1"});
  if (HasFatalFailure() || IsSkipped()) return;
  // 512 filters x 256 channels x 3x3 = 1.18M weights (4.7 MB as float): the
  // result holds them twice as int8 (QDQ model and quantized graph), 2.4 MB,
  // over the 1 MiB limit; the request is uploaded since it is too large too.
  const v1::QuantizeRequest request = ConvJob(256, 4, 512, 2, "chunks");
  auto client = client::Client::Create(
      {.target = server_->target(), .max_message_bytes = 1 << 20});
  ASSERT_TRUE(client.ok());
  int chunks = 0;
  auto result = (*client)->Quantize(request, [&](const v1::JobEvent& e) {
    if (e.has_result_chunk()) ++chunks;
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GE(chunks, 2);
  EXPECT_GT(result->ByteSizeLong(), 1u << 20);
  auto local = InProcess(request);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(CanonicalBytes(*result), CanonicalBytes(*local));
}

TEST_F(JobsTest, DisconnectCancelsTheRunningJob) {
  StartServer({"--workers=1"});
  if (HasFatalFailure() || IsSkipped()) return;
  client::CallCanceller canceller;
  std::string job_id;
  auto result = client_->Quantize(LongJob("leaving"),
                                  [&](const v1::JobEvent& e) {
                                    if (e.has_accepted()) job_id = e.job_id();
                                    if (e.has_progress())
                                      canceller.Cancel();  // running: now leave
                                  },
                                  {.canceller = &canceller});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  ASSERT_FALSE(job_id.empty());
  // The server notices, the job's stage stops and the worker is freed.
  auto finished = server_->WaitForLog(
      "job finished", {{"job_id", job_id}, {"status", "CANCELLED"}});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(Metric("quantd_workers_busy"), 0);
  EXPECT_EQ(Metric("quantd_jobs_total{status=\"cancelled\"}"), 1);
}

// The job stalls in calibration until it is cancelled (--fault_injection):
// a faster job can no longer end before the first tick.
TEST_F(JobsTest, HeartbeatsArriveWhileTheJobRuns) {
  StartServer({"--workers=1", "--heartbeat_seconds=1",
               "--fault_injection=stall:calibrate"});
  if (HasFatalFailure() || IsSkipped()) return;
  client::CallCanceller canceller;
  double heartbeat_elapsed = -1;
  auto result =
      client_->Quantize(SmallJob("beating"),
                        [&](const v1::JobEvent& e) {
                          if (e.has_heartbeat() && heartbeat_elapsed < 0) {
                            heartbeat_elapsed = e.heartbeat().elapsed_seconds();
                            canceller.Cancel();
                          }
                        },
                        {.canceller = &canceller});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  // The first tick comes within one period of the job's start.
  EXPECT_GE(heartbeat_elapsed, 0);
}

// The job stalls at the start of calibration until it is cancelled
// (--fault_injection), so the deadline always fires mid-job, however slow
// the machine: no race with the clock.
TEST_F(JobsTest, DeadlineCancelsTheRunningJob) {
  StartServer({"--workers=1", "--fault_injection=stall:calibrate"});
  if (HasFatalFailure() || IsSkipped()) return;
  bool saw_calibrate = false;
  auto result = client_->Quantize(
      SmallJob("hurry"),
      [&](const v1::JobEvent& e) {
        if (e.has_progress() && e.progress().stage() == "calibrate") {
          saw_calibrate = true;
        }
      },
      {.deadline = absl::Now() + absl::Seconds(3)});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  // The server names the deadline (not a plain cancel) as the job's end,
  // and the stalled stage let go of its worker.
  auto finished = server_->WaitForLog(
      "job finished",
      {{"request_id", "hurry"}, {"status", "DEADLINE_EXCEEDED"}});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_TRUE(saw_calibrate);
  EXPECT_EQ(Metric("quantd_workers_busy"), 0);
  EXPECT_EQ(Metric("quantd_jobs_total{status=\"deadline_exceeded\"}"), 1);
  // The worker is free for the next job: it is admitted and runs (and
  // stalls again; a short deadline ends it).
  auto next = client_->Quantize(SmallJob("next"), nullptr,
                                {.deadline = absl::Now() + absl::Seconds(2)});
  EXPECT_EQ(next.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(JobsTest, StageErrorFailsTheJobAndTheServerGoesOn) {
  StartServer({"--workers=1", "--fault_injection=fail:select"});
  if (HasFatalFailure() || IsSkipped()) return;
  auto failed = client_->Quantize(SmallJob("fails"));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(failed.status().message()),
              ::testing::HasSubstr("stage 'select'"));
  auto health = client_->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");
  EXPECT_EQ(Metric("quantd_workers_busy"), 0);
  EXPECT_EQ(Metric("quantd_jobs_total{status=\"internal\"}"), 1);
}

// An exception on the worker thread (a bug, bad_alloc) fails that job only.
TEST_F(JobsTest, ExceptionOnTheWorkerFailsTheJobAndTheServerGoesOn) {
  StartServer({"--workers=1", "--fault_injection=throw:calibrate"});
  if (HasFatalFailure() || IsSkipped()) return;
  for (const char* id : {"first", "second"}) {
    auto failed = client_->Quantize(SmallJob(id));
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
    EXPECT_THAT(std::string(failed.status().message()),
                ::testing::HasSubstr("stage 'calibrate'"));
  }
  EXPECT_EQ(Metric("quantd_workers_busy"), 0);
  EXPECT_EQ(Metric("quantd_jobs_total{status=\"internal\"}"), 2);
}

// The job stalls in calibration until it is cancelled (--fault_injection),
// so it always outlives the drain, however fast the machine.
TEST_F(JobsTest, SigtermCancelsJobsThatOutliveTheDrainAndExitsZero) {
  StartServer({"--workers=1", "--drain_seconds=1",
               "--fault_injection=stall:calibrate"});
  if (HasFatalFailure() || IsSkipped()) return;
  absl::Notification running;
  std::string job_id;
  absl::Status status;
  std::thread job([&] {
    status = client_
                 ->Quantize(SmallJob("draining"),
                            [&](const v1::JobEvent& e) {
                              if (e.has_accepted()) {
                                job_id = e.job_id();
                                running.Notify();
                              }
                            })
                 .status();
  });
  running.WaitForNotification();
  server_->Signal(SIGTERM);
  auto code = server_->WaitExit(absl::Seconds(60));
  job.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  // The running job got --drain_seconds, then was cancelled by shutdown.
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(server_->WaitForLog("job finished", {{"job_id", job_id}}).ok());
}

TEST_F(JobsTest, FullQueueIsRejectedAtOnce) {
  StartServer({"--workers=1", "--max_queued_jobs=1"});
  if (HasFatalFailure() || IsSkipped()) return;
  client::CallCanceller cancel_running, cancel_queued;
  absl::Notification running, queued;
  const auto run = [&](const std::string& id, client::CallCanceller* c,
                       absl::Notification* admitted) {
    return std::thread([&, id, c, admitted] {
      (void)client_->Quantize(
          LongJob(id),
          [&](const v1::JobEvent& e) {
            if (e.has_accepted() && !admitted->HasBeenNotified()) {
              admitted->Notify();
            }
          },
          {.canceller = c});
    });
  };
  std::thread first = run("first", &cancel_running, &running);
  running.WaitForNotification();
  std::thread second = run("second", &cancel_queued, &queued);
  queued.WaitForNotification();

  const absl::Status third = client_->Quantize(SmallJob("third")).status();
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.message()),
              HasSubstr("--workers=1, --max_queued_jobs=1"));

  cancel_queued.Cancel();
  cancel_running.Cancel();
  first.join();
  second.join();
}

TEST_F(JobsTest, QueuedJobReportsItsPosition) {
  StartServer({"--workers=1", "--max_queued_jobs=2"});
  if (HasFatalFailure() || IsSkipped()) return;
  client::CallCanceller cancel_running;
  absl::Notification running;
  std::thread first([&] {
    (void)client_->Quantize(LongJob("first"),
                            [&](const v1::JobEvent& e) {
                              if (e.has_accepted()) running.Notify();
                            },
                            {.canceller = &cancel_running});
  });
  running.WaitForNotification();
  client::CallCanceller cancel_second;
  int position = -1;
  auto second = client_->Quantize(
      SmallJob("second"),
      [&](const v1::JobEvent& e) {
        if (e.has_accepted()) {
          position = e.accepted().queue_position();
          cancel_second.Cancel();  // leaves the queue without running
        }
      },
      {.canceller = &cancel_second});
  EXPECT_EQ(position, 1);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(server_->WaitForLog("job cancelled while queued").ok());
  cancel_running.Cancel();
  first.join();
}

// A quality target reserves each trial as it reaches it (docs/service.md,
// the memory estimate). With the budget's room held by a running job (it
// stalls at export), the target's growth waits, and its stream says why,
// until that job ends; then the target goes on to its own export.
TEST_F(JobsTest, TargetWaitsForMemoryAndSaysWhy) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  constexpr int kInFlight = 2;  // --compute_threads=1 and the worker
  const v1::QuantizeRequest holder = ConvJob(16, 192, 32, 8, "holder");
  v1::QuantizeRequest target = ConvJob(8, 64, 16, 4, "target");
  const v1::QuantizeRequest plain = target;
  target.mutable_quality_target()->set_value(200);  // out of reach
  target.mutable_quality_target()->set_best_effort(true);
  // What each holds once running: the larger of the admission before the
  // import and the estimate after it (a target without its trials).
  const auto held = [](const v1::QuantizeRequest& r,
                       const v1::QuantizeRequest& as) {
    return std::max(EstimateJobMemoryBytesBeforeImport(r, *ResolveJobSpec(r)),
                    EstimateJobMemoryBytes(as, JobLimits{}, kInFlight));
  };
  const int64_t holder_bytes = held(holder, holder);
  const int64_t target_start = held(target, plain);
  const int64_t target_whole =
      EstimateJobMemoryBytes(target, JobLimits{}, kInFlight);
  // Both jobs as admitted, with less than a MiB to spare: the trials need
  // more, and fit once the holder is gone.
  const int64_t budget_mb = (holder_bytes + target_start) / kMiB + 1;
  ASSERT_GT(target_whole - target_start, kMiB);
  ASSERT_LE(target_whole, budget_mb * kMiB);
  StartServer({"--workers=2", "--compute_threads=1",
               absl::StrCat("--max_job_memory_mb=", budget_mb),
               "--fault_injection=stall:export"});
  if (HasFatalFailure() || IsSkipped()) return;
  client::CallCanceller cancel_holder, cancel_target;
  absl::Notification holding;
  std::thread first([&] {
    (void)client_->Quantize(holder,
                            [&](const v1::JobEvent& e) {
                              if (e.has_progress() &&
                                  e.progress().stage() == "export" &&
                                  !holding.HasBeenNotified()) {
                                holding.Notify();
                              }
                            },
                            {.canceller = &cancel_holder});
  });
  holding.WaitForNotification();
  std::string waiting;
  bool exported_after_waiting = false;
  auto result = client_->Quantize(
      target,
      [&](const v1::JobEvent& e) {
        if (!e.has_progress()) return;
        if (waiting.empty() &&
            absl::StartsWith(e.progress().message(), "waiting for memory")) {
          waiting = e.progress().message();
          cancel_holder.Cancel();  // its room frees: the target goes on
        }
        if (e.progress().stage() == "export") {
          exported_after_waiting = !waiting.empty();
          cancel_target.Cancel();
        }
      },
      {.deadline = absl::Now() + absl::Seconds(60),
       .canceller = &cancel_target});
  cancel_holder.Cancel();  // if the target never asked
  first.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(waiting, HasSubstr(absl::StrCat("MiB of the budget are free "
                                              "(--max_job_memory_mb=",
                                              budget_mb, ")")));
  EXPECT_TRUE(exported_after_waiting);
}

}  // namespace
}  // namespace quantd::testing
