// CancellationToken: cooperative cancellation with an optional deadline.
//
// A job owns one token; the server cancels it when the client leaves or its
// deadline passes, and every long loop in core/ polls Check() so the stage
// stops within a fraction of a second. Built on std::mutex and
// std::condition_variable (Debian's Abseil is not TSan-instrumented).
#ifndef QUANTD_CORE_RUNTIME_CANCELLATION_H_
#define QUANTD_CORE_RUNTIME_CANCELLATION_H_

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace quantd {

class CancellationToken {
 public:
  CancellationToken() = default;
  explicit CancellationToken(absl::Time deadline) : deadline_(deadline) {}

  // The first call wins; later reasons are ignored.
  void Cancel(absl::Status reason = absl::CancelledError("job cancelled"));
  // Waiters see the new deadline at once, earlier or later.
  void SetDeadline(absl::Time deadline);

  bool IsCancelled() const;
  // OK while the job may go on; CANCELLED or DEADLINE_EXCEEDED otherwise.
  absl::Status Check() const;
  // Blocks until Cancel() or the deadline; returns what Check() then says.
  absl::Status WaitUntilCancelled() const;

 private:
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  absl::Time deadline_ = absl::InfiniteFuture();  // guarded by mu_
  absl::Status reason_;                           // guarded by mu_
};

}  // namespace quantd

#endif  // QUANTD_CORE_RUNTIME_CANCELLATION_H_
