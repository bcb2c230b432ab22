#include "clients/batch/retry_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"

namespace quantd::batch {

bool IsRetryable(const absl::Status& status, AttemptPhase phase,
                 bool cancelled_by_runner) {
  if (status.ok() || cancelled_by_runner) return false;
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kCancelled:
      return true;
    case absl::StatusCode::kDeadlineExceeded:
      // The connect timeout says nothing about the job; the job's own
      // deadline would pass again anywhere.
      return phase == AttemptPhase::kConnect;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      // How gRPC and our client report a stream cut mid-way.
      return absl::StrContains(status.message(), "RST_STREAM") ||
             absl::StrContains(status.message(), "Stream removed") ||
             absl::StrContains(status.message(), "stream ended without") ||
             absl::StrContains(status.message(), "Socket closed");
    default:
      return false;
  }
}

absl::Duration RetryPolicy::Backoff(int retry, double unit) const {
  const double nominal =
      absl::ToDoubleSeconds(initial_backoff) *
      std::pow(multiplier, static_cast<double>(std::max(retry, 1) - 1));
  const double capped = std::min(nominal, absl::ToDoubleSeconds(max_backoff));
  const double factor = 1.0 - jitter + 2.0 * jitter * unit;
  return absl::Seconds(std::max(0.0, capped * factor));
}

}  // namespace quantd::batch
