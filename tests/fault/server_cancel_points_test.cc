// Cancellation inside every stage, through quantd (docs/reliability.md).
// CancelPoints shows in-process that each stage stops
// at its next check; these tests show the server side of it. A one-worker
// quantd runs the every-stage job (example CNN, mixed precision, GPTQ) with
// --fault_injection=stall:STAGE@N: the job stops at a seeded random progress
// report N strictly inside the stage and warns the client, which then
// cancels the call (or lets its deadline pass). The job must end in that
// same stage (no later stage started) with CANCELLED / DEADLINE_EXCEEDED,
// the worker and the memory reservation must be free at once
// (quantd_workers_busy and quantd_memory_reserved_bytes back to 0 when the
// server logs the end) and the next job must run on the worker. How long the
// server took from the cancel to freeing the worker (`cancel_seconds` of
// `job finished`) is printed, not asserted: it is a time, measured by
// bench/service/service_bench --cancel_jobs.
#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/fault/connect.h"
#include "tests/fault/every_stage_job.h"
#include "tests/integration/server_process.h"

namespace quantd::testing {
namespace {

struct StallPoint {
  std::string stage;
  int tick = 1;   // the progress report of the stage the job stalls at
  int ticks = 0;  // the stage's reports in the in-process reference run
};

// A seeded random report in the first half of every stage's reports, from
// an in-process reference run on one thread. Not later: a server with a
// compute thread may drop a report that arrives out of order
// (MonotonicProgressSink). A stage with fewer than 3 reports stalls at its
// first (its "done", before the next stage's check).
const std::vector<StallPoint>& StallPoints() {
  static const auto* points = [] {
    auto* out = new std::vector<StallPoint>;
    TpcRegistry registry;
    if (!registry.AddBuiltins().ok()) return out;
    StageRecorder reference(nullptr, "", 0);
    if (!RunRecordedJob(EveryStageRequest(), registry, nullptr, &reference)
             .ok()) {
      return out;
    }
    std::mt19937 rng(815);  // seeded: the same points on every run
    for (const std::string& stage : reference.stages()) {
      const auto it = reference.ticks().find(stage);
      StallPoint p{stage, 1, it == reference.ticks().end() ? 0 : it->second};
      if (p.ticks >= 3) {
        p.tick = std::uniform_int_distribution<int>(1, (p.ticks - 1) / 2)(rng);
      }
      out->push_back(p);
    }
    return out;
  }();
  return *points;
}

std::unique_ptr<ServerProcess> StartStalled(const StallPoint& point) {
  auto server = ServerProcess::Start(
      {absl::StrCat("--fault_injection=stall:", point.stage, "@", point.tick),
       "--workers=1", "--compute_threads=1", "--max_queued_jobs=4",
       "--drain_seconds=5"});
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// Runs the job as `request_id`; `at_stall` runs on the event thread when
// the server warns that the job stalled. Sets *stalled if it did.
absl::Status RunToStall(client::Client& client, const std::string& request_id,
                        const std::function<void()>& at_stall,
                        const client::QuantizeOptions& options, bool* stalled) {
  v1::QuantizeRequest request = EveryStageRequest();
  request.set_request_id(request_id);
  *stalled = false;
  return client
      .Quantize(
          request,
          [&](const v1::JobEvent& event) {
            if (event.has_warning() &&
                absl::StartsWith(event.warning().message(),
                                 "fault injected: stalled")) {
              *stalled = true;
              if (at_stall) at_stall();
            }
          },
          options)
      .status();
}

// The job `request_id` ended with one of `codes` in `stage`, and when the
// server logged it the worker and the reservation were already free.
void ExpectEndedInStageAndFreed(ServerProcess& server,
                                const std::string& request_id,
                                const std::string& stage,
                                const std::vector<std::string>& codes) {
  auto finished =
      server.WaitForLog("job finished", {{"request_id", request_id}});
  ASSERT_TRUE(finished.ok()) << finished.status() << "\n"
                             << absl::StrJoin(server.Lines(), "\n");
  const std::string status = finished->value("status", "");
  EXPECT_TRUE(std::find(codes.begin(), codes.end(), status) != codes.end())
      << finished->dump();
  EXPECT_EQ(finished->value("stage", ""), stage) << "a later stage started";
  EXPECT_TRUE(finished->contains("cancel_seconds")) << finished->dump();
  std::printf("  %s: %s in %s, cancel to free worker %s s\n",
              request_id.c_str(), status.c_str(), stage.c_str(),
              finished->value("cancel_seconds", "?").c_str());
  auto metrics = HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(MetricValue(*metrics, "quantd_workers_busy"), 0);
  EXPECT_EQ(MetricValue(*metrics, "quantd_memory_reserved_bytes"), 0);
  EXPECT_EQ(MetricValue(*metrics, "quantd_queue_depth"), 0);
}

TEST(ServerCancelPoints, ClientCancelInsideEveryStageFreesTheWorkerAtOnce) {
  ASSERT_FALSE(StallPoints().empty()) << "the reference job failed";
  for (const StallPoint& point : StallPoints()) {
    SCOPED_TRACE(absl::StrCat(point.stage, ": stall at report ", point.tick,
                              " of ", point.ticks));
    auto server = StartStalled(point);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_NE(client, nullptr);
    // Twice: the second job shows the single worker runs again.
    for (const std::string id : {"first", "next"}) {
      client::CallCanceller canceller;
      bool stalled = false;
      const absl::Status status = RunToStall(
          *client, id, [&] { canceller.Cancel(); }, {.canceller = &canceller},
          &stalled);
      EXPECT_TRUE(stalled) << id << " never stalled: " << status;
      EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
      ExpectEndedInStageAndFreed(*server, id, point.stage, {"CANCELLED"});
    }
  }
}

// The call's deadline passes while the job is stalled inside each stage.
// One server per stage, all at once, so the test takes one deadline. The
// deadline only has to exceed the time to reach the stall: the whole job
// takes ~0.1 s alone (plain build), the 9 servers at once under ASan on 2
// cores a few seconds; the stall guarantees the job cannot finish before.
TEST(ServerCancelPoints, DeadlineInsideEveryStageFreesTheWorker) {
  constexpr absl::Duration kDeadline = absl::Seconds(20);
  const std::vector<StallPoint>& points = StallPoints();
  ASSERT_FALSE(points.empty()) << "the reference job failed";
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (const StallPoint& point : points) {
    servers.push_back(StartStalled(point));
    ASSERT_NE(servers.back(), nullptr);
  }
  std::vector<absl::Status> statuses(points.size());
  std::vector<char> stalled(points.size(), 0);
  std::vector<std::thread> threads;
  const absl::Time deadline = absl::Now() + kDeadline;
  for (size_t i = 0; i < points.size(); ++i) {
    threads.emplace_back([&, i] {
      auto client = Connect(*servers[i]);
      if (client == nullptr) return;
      bool seen = false;
      statuses[i] = RunToStall(*client, "deadline", nullptr,
                               {.deadline = deadline}, &seen);
      stalled[i] = seen;
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(points[i].stage);
    EXPECT_TRUE(stalled[i]) << statuses[i];
    EXPECT_EQ(statuses[i].code(), absl::StatusCode::kDeadlineExceeded)
        << statuses[i];
    // The token's own deadline and the call's cancellation race; either
    // names the end correctly.
    ExpectEndedInStageAndFreed(*servers[i], "deadline", points[i].stage,
                               {"DEADLINE_EXCEEDED", "CANCELLED"});
  }
}

}  // namespace
}  // namespace quantd::testing
