#include "core/runtime/cancellation.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace quantd {
namespace {

TEST(CancellationToken, StartsLive) {
  CancellationToken token;
  EXPECT_TRUE(token.Check().ok());
}

TEST(CancellationToken, FirstReasonWins) {
  CancellationToken token;
  token.Cancel(absl::CancelledError("client went away"));
  token.Cancel(absl::DeadlineExceededError("later"));
  EXPECT_EQ(token.Check().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(token.Check().message(), "client went away");
}

TEST(CancellationToken, PastDeadlineIsDeadlineExceeded) {
  CancellationToken token(absl::Now() - absl::Seconds(1));
  EXPECT_EQ(token.Check().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(CancellationToken, WaitReturnsTheReasonOfACancelFromAnotherThread) {
  CancellationToken token;
  std::thread canceller(
      [&] { token.Cancel(absl::CancelledError("client went away")); });
  const absl::Status status = token.WaitUntilCancelled();
  canceller.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "client went away");
}

TEST(CancellationToken, WaitEndsAtTheDeadline) {
  CancellationToken token(absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(token.WaitUntilCancelled().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(CancellationToken, DeadlineMovedIntoThePastWakesAWaiter) {
  // No deadline at first, so only SetDeadline can end this wait.
  CancellationToken token;
  std::thread waiter([&] {
    EXPECT_EQ(token.WaitUntilCancelled().code(),
              absl::StatusCode::kDeadlineExceeded);
  });
  token.SetDeadline(absl::Now() - absl::Seconds(1));
  waiter.join();
}

TEST(CancellationToken, CancelWakesEveryWaiter) {
  CancellationToken token;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      EXPECT_EQ(token.WaitUntilCancelled().code(),
                absl::StatusCode::kCancelled);
    });
  }
  token.Cancel();
  for (std::thread& w : waiters) w.join();
}

}  // namespace
}  // namespace quantd
