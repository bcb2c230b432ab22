// Faults at every stage of a job (docs/reliability.md). Each server runs with
// --fault_injection=stall:STAGE (the job waits at the start of STAGE until it
// is cancelled), so the client knows from the progress events exactly where
// the job is when the fault hits: no races with the clock. After each fault
// the server must have freed its worker and go on serving.
#include <algorithm>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "gtest/gtest.h"
#include "tests/fault/connect.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

// The pipeline's stages in order (core/pipeline/quantize_job.cc).
const std::vector<std::string>& Stages() {
  static const auto* stages =
      new std::vector<std::string>{"import",  "prepare", "calibrate", "select",
                                   "correct", "export",  "report"};
  return *stages;
}

std::unique_ptr<ServerProcess> StartServer(const std::string& faults,
                                           int workers = 1) {
  auto server = ServerProcess::Start(
      {"--fault_injection=" + faults, absl::StrCat("--workers=", workers),
       "--max_queued_jobs=4", "--drain_seconds=5"});
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// Runs SmallJob; `at_stage` runs on the event thread when `stage` starts.
absl::Status RunUntilStage(client::Client& client, const std::string& stage,
                           const std::function<void()>& at_stage,
                           const client::QuantizeOptions& options = {},
                           bool* reached = nullptr) {
  bool seen = false;
  auto result = client.Quantize(
      SmallJob("fault-" + stage),
      [&](const v1::JobEvent& event) {
        if (!seen && event.has_progress() &&
            event.progress().stage() == stage) {
          seen = true;
          if (at_stage) at_stage();
        }
      },
      options);
  if (reached != nullptr) *reached = seen;
  return result.status();
}

// The server's job finished with one of `codes`, the server is ready, and
// its worker is free: with --workers=1 the next job reaches `stage` again
// (then it is cancelled).
void ExpectServerRecovered(ServerProcess& server, client::Client& client,
                           const std::vector<std::string>& codes,
                           const std::string& stage) {
  auto finished = server.WaitForLog("job finished");
  ASSERT_TRUE(finished.ok()) << finished.status();
  const std::string status = finished->value("status", "");
  EXPECT_TRUE(std::find(codes.begin(), codes.end(), status) != codes.end())
      << finished->dump();
  auto health = client.Health("quantd.v1.QuantizationService");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");
  client::CallCanceller canceller;
  bool reached = false;
  absl::Status next = RunUntilStage(
      client, stage, [&] { canceller.Cancel(); }, {.canceller = &canceller},
      &reached);
  EXPECT_TRUE(reached) << "next job: " << next;
}

class StageFaultTest : public ::testing::TestWithParam<std::string> {};

// The client cancels the call (RST_STREAM) while the job is in the stage.
TEST_P(StageFaultTest, ClientCancelStopsTheJobAndFreesTheWorker) {
  const std::string stage = GetParam();
  auto server = StartServer("stall:" + stage);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  client::CallCanceller canceller;
  bool reached = false;
  absl::Status status = RunUntilStage(
      *client, stage, [&] { canceller.Cancel(); }, {.canceller = &canceller},
      &reached);
  EXPECT_TRUE(reached) << "never reached " << stage << ": " << status;
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  ExpectServerRecovered(*server, *client, {"CANCELLED"}, stage);
}

// The client process dies while the job is in the stage: the connection
// closes without a cancel; gRPC still cancels the call and the job.
TEST_P(StageFaultTest, ClientProcessKilledStopsTheJob) {
  const std::string stage = GetParam();
  auto server = StartServer("stall:" + stage);
  ASSERT_NE(server, nullptr);
  auto child = Subprocess::Start(
      {BuildPath("tests/fault/fault_client"), server->target()});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->ReadUntil("stage " + stage).has_value())
      << absl::StrJoin((*child)->Lines(), "\n");
  (*child)->Signal(SIGKILL);
  const absl::StatusOr<int> code = (*child)->Wait();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, -SIGKILL);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  ExpectServerRecovered(*server, *client, {"CANCELLED"}, stage);
}

// The worker hits an internal error (a failed stage, or an exception thrown
// in it): the job fails with INTERNAL naming the stage; the server goes on.
TEST_P(StageFaultTest, InternalErrorFailsTheJobCleanly) {
  const std::string stage = GetParam();
  for (const std::string kind : {"fail", "throw"}) {
    SCOPED_TRACE(kind);
    auto server = StartServer(kind + ":" + stage);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_NE(client, nullptr);
    bool reached = false;
    absl::Status status = RunUntilStage(*client, stage, nullptr, {}, &reached);
    EXPECT_TRUE(reached);
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
    EXPECT_NE(status.message().find(stage), absl::string_view::npos) << status;
    ExpectServerRecovered(*server, *client, {"INTERNAL"}, stage);
  }
}

// A job cancelled while it waits in the queue leaves it at once.
TEST(QueuedFault, CancelWhileQueuedLeavesTheQueue) {
  auto server = StartServer("stall:import", /*workers=*/1);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  client::CallCanceller first;
  // The second job is sent once the first runs on the only worker. Waiting
  // for "job accepted" was not enough: two reactors can reach the job pool
  // in the other order than admission counted them (then the "queued" job
  // ran first; 1 run in 12 under ASan).
  absl::Notification first_running;
  std::thread running([&] {
    (void)RunUntilStage(*client, "import", [&] { first_running.Notify(); },
                        {.canceller = &first});
  });
  first_running.WaitForNotification();
  client::CallCanceller second;
  auto queued =
      client->Quantize(SmallJob("queued"),
                       [&](const v1::JobEvent& event) {
                         if (event.has_accepted()) {
                           EXPECT_EQ(event.accepted().queue_position(), 1);
                           second.Cancel();
                         }
                       },
                       {.canceller = &second});
  EXPECT_EQ(queued.status().code(), absl::StatusCode::kCancelled);
  auto left = server->WaitForLog("job cancelled while queued");
  EXPECT_TRUE(left.ok()) << left.status() << "; server log:\n"
                         << absl::StrJoin(server->Lines(), "\n");
  first.Cancel();
  running.join();
  auto finished =
      server->WaitForLog("job finished", {{"request_id", "fault-import"}});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->value("status", ""), "CANCELLED");
}

INSTANTIATE_TEST_SUITE_P(EveryStage, StageFaultTest,
                         ::testing::ValuesIn(Stages()),
                         [](const auto& info) { return info.param; });

// A deadline that passes while the job is in each stage. All stages run at
// once, one server each, so the test takes one deadline, not seven. The
// deadline (20 s) only has to exceed the time to reach the stage; the stall
// guarantees the job cannot finish before it.
TEST(DeadlineFault, DeadlineInEveryStageEndsTheJobAndFreesTheWorker) {
  constexpr absl::Duration kDeadline = absl::Seconds(20);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (const std::string& stage : Stages()) {
    servers.push_back(StartServer("stall:" + stage));
    ASSERT_NE(servers.back(), nullptr);
  }
  std::vector<absl::Status> statuses(Stages().size());
  std::vector<char> reached(Stages().size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < Stages().size(); ++i) {
    threads.emplace_back([&, i] {
      auto client = Connect(*servers[i]);
      if (client == nullptr) return;
      bool seen = false;
      statuses[i] = RunUntilStage(*client, Stages()[i], nullptr,
                                  {.deadline = absl::Now() + kDeadline}, &seen);
      reached[i] = seen;
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < Stages().size(); ++i) {
    SCOPED_TRACE(Stages()[i]);
    EXPECT_TRUE(reached[i]);
    EXPECT_EQ(statuses[i].code(), absl::StatusCode::kDeadlineExceeded)
        << statuses[i];
    auto client = Connect(*servers[i]);
    ASSERT_NE(client, nullptr);
    // Server side the call's cancellation and the token's own deadline race;
    // either names the job's end correctly.
    ExpectServerRecovered(*servers[i], *client,
                          {"DEADLINE_EXCEEDED", "CANCELLED"}, Stages()[i]);
  }
}

}  // namespace
}  // namespace quantd::testing
