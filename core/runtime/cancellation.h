// CancellationToken: cooperative cancellation with an optional deadline.
//
// A job owns one token; the server cancels it when the client leaves or its
// deadline passes, and every long loop in core/ polls Check() so the stage
// stops within a fraction of a second.
#ifndef QUANTD_CORE_RUNTIME_CANCELLATION_H_
#define QUANTD_CORE_RUNTIME_CANCELLATION_H_

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace quantd {

class CancellationToken {
 public:
  CancellationToken() = default;
  explicit CancellationToken(absl::Time deadline) : deadline_(deadline) {}

  // The first call wins; later reasons are ignored.
  void Cancel(absl::Status reason = absl::CancelledError("job cancelled"));
  void SetDeadline(absl::Time deadline);

  bool IsCancelled() const;
  // OK while the job may go on; CANCELLED or DEADLINE_EXCEEDED otherwise.
  absl::Status Check() const;
  // Blocks until Cancel() or the deadline; returns what Check() then says.
  absl::Status WaitUntilCancelled() const;

 private:
  std::atomic<bool> cancelled_{false};
  absl::Time deadline_ = absl::InfiniteFuture();
  mutable absl::Mutex mu_;
  absl::Status reason_ ABSL_GUARDED_BY(mu_);
};

}  // namespace quantd

#endif  // QUANTD_CORE_RUNTIME_CANCELLATION_H_
