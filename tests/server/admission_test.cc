#include "server/admission.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::server {
namespace {

using ::testing::HasSubstr;

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

TEST(AdmissionTest, DrainingAnswersUnavailable) {
  AdmissionController admission({.workers = 1, .max_queued_jobs = 1});
  admission.StopAdmitting();
  EXPECT_EQ(admission.TryAdmit(0).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace quantd::server
