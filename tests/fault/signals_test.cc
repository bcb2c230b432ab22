// SIGTERM and SIGKILL while jobs run (docs/reliability.md). The job is held
// at a known stage with --fault_injection=stall:calibrate.
#include <csignal>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "clients/cpp/client.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"

namespace quantd::testing {
namespace {

struct RunningJob {
  absl::Notification at_stage;
  absl::Status status;
  std::thread thread;
};

// Starts SmallJob on its own thread and returns once it is in `stage`.
std::unique_ptr<RunningJob> StartJob(client::Client& client,
                                     const std::string& stage) {
  auto job = std::make_unique<RunningJob>();
  RunningJob* raw = job.get();
  job->thread = std::thread([&client, raw, stage] {
    auto result = client.Quantize(
        SmallJob("signal-job"), [raw, stage](const v1::JobEvent& event) {
          if (event.has_progress() && event.progress().stage() == stage &&
              !raw->at_stage.HasBeenNotified()) {
            raw->at_stage.Notify();
          }
        });
    raw->status = result.status();
    if (!raw->at_stage.HasBeenNotified()) raw->at_stage.Notify();
  });
  job->at_stage.WaitForNotification();
  return job;
}

// SIGTERM: new jobs are refused, the running one gets --drain_seconds and is
// then cancelled, the process exits 0 and its client gets a clear status.
TEST(Signals, SigtermDrainsCancelsTheStalledJobAndExitsZero) {
  auto server = ServerProcess::Start({"--fault_injection=stall:calibrate",
                                      "--workers=1", "--drain_seconds=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = client::Client::Create({.target = (*server)->target()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto job = StartJob(**client, "calibrate");
  (*server)->Signal(SIGTERM);
  ASSERT_TRUE((*server)->WaitForLog("draining").ok());
  job->thread.join();
  // Cancelled by the drain, or cut off as the listener went away.
  EXPECT_TRUE(job->status.code() == absl::StatusCode::kCancelled ||
              job->status.code() == absl::StatusCode::kUnavailable)
      << job->status;
  auto exit_code = (*server)->WaitExit();
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0);
  auto finished = (*server)->WaitForLog("job finished");
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->value("status", ""), "CANCELLED");
}

// SIGKILL: nothing of the server survives; its client does not hang but gets
// UNAVAILABLE, and a new server on a new port serves at once.
TEST(Signals, SigkillDuringAJobGivesTheClientUnavailable) {
  auto server = ServerProcess::Start(
      {"--fault_injection=stall:calibrate", "--workers=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  client::ChannelOptions options{.target = (*server)->target()};
  options.enable_retries = false;
  auto client = client::Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  auto job = StartJob(**client, "calibrate");
  (*server)->Signal(SIGKILL);
  job->thread.join();
  EXPECT_EQ(job->status.code(), absl::StatusCode::kUnavailable) << job->status;
  EXPECT_FALSE((*server)->WaitExit().ok());  // killed, no exit code

  auto next = ServerProcess::Start({"--workers=1"});
  ASSERT_TRUE(next.ok()) << next.status();
  auto next_client = client::Client::Create({.target = (*next)->target()});
  ASSERT_TRUE(next_client.ok());
  auto result = (*next_client)->Quantize(SmallJob("after-kill"));
  EXPECT_TRUE(result.ok()) << result.status();
}

}  // namespace
}  // namespace quantd::testing
