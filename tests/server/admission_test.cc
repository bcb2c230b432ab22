#include "server/admission.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "core/runtime/cancellation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(AdmissionTest, FirstJobsRunAtOnceThenQueueInOrder) {
  AdmissionController admission({.workers = 2, .max_queued_jobs = 2});
  std::vector<int> positions;
  std::vector<std::unique_ptr<AdmissionTicket>> tickets;
  for (int i = 0; i < 4; ++i) {
    auto ticket = admission.TryAdmit(0);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    positions.push_back((*ticket)->queue_position());
    tickets.push_back(*std::move(ticket));
  }
  // Two workers: jobs 1-2 run (0), jobs 3-4 wait at places 1 and 2.
  EXPECT_EQ(positions, (std::vector<int>{0, 0, 1, 2}));
}

TEST(AdmissionTest, FullQueueIsRejectedAtOnceNamingTheFlags) {
  AdmissionController admission({.workers = 1, .max_queued_jobs = 1});
  auto running = admission.TryAdmit(0);
  auto queued = admission.TryAdmit(0);
  ASSERT_TRUE(running.ok() && queued.ok());
  (*running)->MarkRunning();
  auto rejected = admission.TryAdmit(0);
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(rejected.status().message()),
              HasSubstr("1 running, 1 queued (--workers=1, "
                        "--max_queued_jobs=1)"));
}

TEST(AdmissionTest, ReleasedTicketFreesItsPlace) {
  AdmissionController admission({.workers = 1, .max_queued_jobs = 0});
  auto first = admission.TryAdmit(0);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(admission.TryAdmit(0).ok());
  first->reset();
  EXPECT_TRUE(admission.TryAdmit(0).ok());
}

TEST(AdmissionTest, JobLargerThanBudgetIsAFailedPreconditionNotARetry) {
  AdmissionController admission(
      {.workers = 4, .max_queued_jobs = 4, .max_memory_bytes = 100 * kMiB});
  auto rejected = admission.TryAdmit(101 * kMiB);
  // RESOURCE_EXHAUSTED would make clients retry a job that never fits.
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(rejected.status().message()),
              HasSubstr("101 MiB, more than the whole budget "
                        "(--max_job_memory_mb=100)"));
}

TEST(AdmissionTest, MemoryOfAdmittedJobsCountsAgainstTheBudget) {
  AdmissionController admission(
      {.workers = 4, .max_queued_jobs = 4, .max_memory_bytes = 100 * kMiB});
  auto first = admission.TryAdmit(60 * kMiB);
  ASSERT_TRUE(first.ok());
  // 60 + 50 > 100: rejected, 40 MiB free.
  auto second = admission.TryAdmit(50 * kMiB);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("only 40 MiB of the budget are free"));
  first->reset();
  EXPECT_TRUE(admission.TryAdmit(50 * kMiB).ok());
}

TEST(AdmissionTest, GrowChecksTheBudgetAndKeepsTheTicketOnFailure) {
  AdmissionController admission(
      {.workers = 4, .max_queued_jobs = 4, .max_memory_bytes = 100 * kMiB});
  auto first = admission.TryAdmit(30 * kMiB);
  auto second = admission.TryAdmit(30 * kMiB);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE((*first)->Grow(20 * kMiB).ok());  // 50 + 30 of 100
  EXPECT_EQ((*first)->memory_bytes(), 50 * kMiB);
  // 50 + 30 + 30 > 100: the 50 MiB ticket could have 70 MiB.
  const absl::Status more = (*first)->Grow(30 * kMiB);
  EXPECT_EQ(more.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.message()),
              HasSubstr("80 MiB but only 70 MiB of the budget are free"));
  EXPECT_EQ((*first)->memory_bytes(), 50 * kMiB);
  EXPECT_EQ(admission.snapshot().memory_bytes, 80 * kMiB);
  EXPECT_EQ((*first)->Grow(60 * kMiB).code(),
            absl::StatusCode::kFailedPrecondition);
  first->reset();
  second->reset();
  EXPECT_EQ(admission.snapshot().memory_bytes, 0);
}

TEST(AdmissionTest, SnapshotAndObserverTrackQueuedAndRunning) {
  std::vector<std::pair<int, int>> seen;
  AdmissionController admission({.workers = 1, .max_queued_jobs = 1},
                                [&](const AdmissionController::Snapshot& s) {
                                  seen.emplace_back(s.queued, s.running);
                                });
  {
    auto ticket = admission.TryAdmit(0);
    ASSERT_TRUE(ticket.ok());
    (*ticket)->MarkRunning();
  }
  EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{1, 0}, {0, 1}, {0, 0}}));
}

// Two running jobs of 40 MiB in a 100 MiB budget (two workers, one queue
// place); the first grows by 50 for a stage it reaches, on its own thread.
struct TwoRunningJobs {
  TwoRunningJobs()
      : admission({.workers = 2,
                   .max_queued_jobs = 1,
                   .max_memory_bytes = 100 * kMiB}),
        first(*admission.TryAdmit(40 * kMiB)),
        second(*admission.TryAdmit(40 * kMiB)) {
    first->MarkRunning();
    second->MarkRunning();
  }
  // Starts the growth and returns once the controller counts it (and has
  // found that it does not fit at once).
  std::thread Grow(const CancellationToken* cancel, absl::Status* status,
                   AdmissionTicket::WaitReason on_wait = nullptr) {
    std::thread grower([this, cancel, status, on_wait] {
      *status = first->GrowWaiting(50 * kMiB, cancel, on_wait);
    });
    while (admission.snapshot().growing_bytes == 0) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return grower;
  }
  AdmissionController admission;
  std::unique_ptr<AdmissionTicket> first, second;
};

// The growth fits only once the second job has finished.
TEST(AdmissionTest, GrowWaitingWaitsForAnotherJobToRelease) {
  TwoRunningJobs jobs;
  AdmissionController& admission = jobs.admission;
  absl::Status status = absl::UnknownError("not grown");
  std::thread grower = jobs.Grow(nullptr, &status);
  EXPECT_EQ(admission.snapshot().growing_bytes, 50 * kMiB);
  // While it waits, a new job that would take the room it waits for is
  // refused (the 20 free MiB are promised).
  auto third = admission.TryAdmit(10 * kMiB);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.status().message()),
              HasSubstr("50 MiB more are promised to running jobs"));
  jobs.second.reset();  // the second job ends
  grower.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(jobs.first->memory_bytes(), 90 * kMiB);
  EXPECT_EQ(admission.snapshot().memory_bytes, 90 * kMiB);
}

// No other running job could free memory: the growth fails at once and the
// ticket keeps what it had. Queued jobs do not count (they wait for the
// worker the growing job holds).
TEST(AdmissionTest, GrowWaitingFailsWhenNoRunningJobCouldRelease) {
  AdmissionController admission(
      {.workers = 1, .max_queued_jobs = 1, .max_memory_bytes = 100 * kMiB});
  auto first = admission.TryAdmit(40 * kMiB);
  auto queued = admission.TryAdmit(40 * kMiB);
  ASSERT_TRUE(first.ok() && queued.ok());
  (*first)->MarkRunning();
  const absl::Status status = (*first)->GrowWaiting(50 * kMiB, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("every other running job waits for memory too"));
  EXPECT_EQ((*first)->memory_bytes(), 40 * kMiB);
  // More than the whole budget never fits (and admission can tell first).
  EXPECT_EQ(admission.CheckWholeBudget(110 * kMiB).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(admission.CheckWholeBudget(100 * kMiB).ok());
  EXPECT_EQ((*first)->GrowWaiting(70 * kMiB, nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
  // What fits is granted at once.
  EXPECT_TRUE((*first)->GrowWaiting(20 * kMiB, nullptr).ok());
  EXPECT_EQ(admission.snapshot().memory_bytes, 100 * kMiB);
}

// The waiting job is told why once, when it starts to wait: the whole job
// (40 + 50 MiB) against what the other job leaves (100 - 40). A growth
// that fits, or fails, at once is never told to wait.
TEST(AdmissionTest, GrowWaitingTellsWhyOnceWhenItWaits) {
  TwoRunningJobs jobs;
  std::vector<std::string> reasons;
  const auto tell = [&](absl::string_view r) { reasons.emplace_back(r); };
  absl::Status status;
  std::thread grower = jobs.Grow(nullptr, &status, tell);
  jobs.second.reset();
  grower.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(reasons,
              ElementsAre(HasSubstr("job needs an estimated 90 MiB but only "
                                    "60 MiB of the budget are free")));
  // A job admitted but not running frees nothing: 10 MiB more fail at
  // once; 5 fit at once.
  reasons.clear();
  auto waiting_for_a_worker = jobs.admission.TryAdmit(5 * kMiB);
  ASSERT_TRUE(waiting_for_a_worker.ok());
  EXPECT_EQ(jobs.first->GrowWaiting(10 * kMiB, nullptr, tell).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(jobs.first->GrowWaiting(5 * kMiB, nullptr, tell).ok());
  EXPECT_THAT(reasons, IsEmpty());
}

TEST(AdmissionTest, GrowWaitingEndsWithTheCancellation) {
  TwoRunningJobs jobs;
  AdmissionController& admission = jobs.admission;
  CancellationToken token;
  absl::Status status;
  std::thread grower = jobs.Grow(&token, &status);
  token.Cancel();
  grower.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(jobs.first->memory_bytes(), 40 * kMiB);
  EXPECT_EQ(admission.snapshot().memory_bytes, 80 * kMiB);
  EXPECT_EQ(admission.snapshot().growing_bytes, 0);
  // Nothing is promised any more: a new job fits the 20 MiB free.
  EXPECT_TRUE(admission.TryAdmit(20 * kMiB).ok());
}

TEST(AdmissionTest, DrainingAnswersUnavailable) {
  AdmissionController admission({.workers = 1, .max_queued_jobs = 1});
  admission.StopAdmitting();
  EXPECT_EQ(admission.TryAdmit(0).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace quantd::server
