#include "core/runtime/cancellation.h"

namespace quantd {

void CancellationToken::Cancel(absl::Status reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load()) return;
  reason_ = reason.ok() ? absl::CancelledError("job cancelled") : reason;
  cancelled_.store(true);
}

void CancellationToken::SetDeadline(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  deadline_ = deadline;
}

absl::Status CancellationToken::WaitUntilCancelled() const {
  absl::MutexLock lock(&mu_);
  const auto cancelled = [](const std::atomic<bool>* c) { return c->load(); };
  // A deadline moved later while waiting is seen on the next wake-up.
  while (!cancelled_.load() && absl::Now() < deadline_) {
    mu_.AwaitWithDeadline(absl::Condition(+cancelled, &cancelled_), deadline_);
  }
  if (cancelled_.load()) return reason_;
  return absl::DeadlineExceededError("job deadline exceeded");
}

bool CancellationToken::IsCancelled() const { return !Check().ok(); }

absl::Status CancellationToken::Check() const {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load()) return reason_;
  if (deadline_ != absl::InfiniteFuture() && absl::Now() >= deadline_) {
    return absl::DeadlineExceededError("job deadline exceeded");
  }
  return absl::OkStatus();
}

}  // namespace quantd
