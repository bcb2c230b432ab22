#include "core/runtime/cancellation.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace quantd {

void CancellationToken::Cancel(absl::Status reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.load()) return;
    reason_ = reason.ok() ? absl::CancelledError("job cancelled") : reason;
    cancelled_.store(true);
  }
  cv_.notify_all();
}

void CancellationToken::SetDeadline(absl::Time deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    deadline_ = deadline;
  }
  cv_.notify_all();
}

absl::Status CancellationToken::WaitUntilCancelled() const {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cancelled_.load()) return reason_;
    const absl::Time now = absl::Now();
    if (now >= deadline_) break;
    if (deadline_ == absl::InfiniteFuture()) {
      cv_.wait(lock);
    } else {
      // The deadline is wall-clock time and the wait runs on the steady
      // clock, so wake at least hourly and re-check (also bounds the
      // chrono conversion of far deadlines).
      cv_.wait_for(lock, absl::ToChronoNanoseconds(
                             std::min(deadline_ - now, absl::Hours(1))));
    }
  }
  return absl::DeadlineExceededError("job deadline exceeded");
}

bool CancellationToken::IsCancelled() const { return !Check().ok(); }

absl::Status CancellationToken::Check() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load()) return reason_;
  if (deadline_ != absl::InfiniteFuture() && absl::Now() >= deadline_) {
    return absl::DeadlineExceededError("job deadline exceeded");
  }
  return absl::OkStatus();
}

}  // namespace quantd
