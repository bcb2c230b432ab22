#include "core/runtime/cancellation.h"

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

}  // namespace
}  // namespace quantd
