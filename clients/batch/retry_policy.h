// Which failures of a batch job attempt are worth another attempt, and how
// long to wait before it (exponential backoff with jitter).
//
// Retried (on another replica): UNAVAILABLE (replica down, draining or
// unreachable), RESOURCE_EXHAUSTED (queue or memory budget full), broken
// streams (ABORTED, DATA_LOSS, a stream that ended without a result, RST),
// CANCELLED when the runner did not cancel (the replica cancelled the job
// while shutting down) and a connect that did not finish in time. Anything
// else (INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED, the job's own deadline,
// ...) fails the job at once with the server's message.
#ifndef QUANTD_CLIENTS_BATCH_RETRY_POLICY_H_
#define QUANTD_CLIENTS_BATCH_RETRY_POLICY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace quantd::batch {

// Which phase an attempt failed in.
enum class AttemptPhase { kConnect, kCall };

bool IsRetryable(const absl::Status& status, AttemptPhase phase,
                 bool cancelled_by_runner);

struct RetryPolicy {
  int max_retries = 3;  // attempts = 1 + max_retries
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(15);
  double multiplier = 2.0;
  // The wait is uniformly drawn from [1 - jitter, 1 + jitter] x the nominal.
  double jitter = 0.2;

  // Wait before retry number `retry` (1 = the first retry); `unit` is a
  // uniform draw from [0, 1) supplied by the caller.
  absl::Duration Backoff(int retry, double unit) const;
};

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_RETRY_POLICY_H_
