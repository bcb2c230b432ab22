#include "clients/batch/replica_picker.h"

#include <algorithm>
#include <utility>

namespace quantd::batch {

ReplicaPicker::ReplicaPicker(std::vector<std::string> names,
                             absl::Duration base_cooldown,
                             absl::Duration max_cooldown)
    : names_(std::move(names)),
      base_cooldown_(base_cooldown),
      max_cooldown_(max_cooldown),
      in_flight_(names_.size(), 0),
      consecutive_failures_(names_.size(), 0),
      cool_until_(names_.size(), absl::InfinitePast()) {}

int ReplicaPicker::Acquire(int avoid, absl::Time now) {
  absl::MutexLock lock(&mu_);
  const int n = static_cast<int>(names_.size());
  int chosen = -1;
  // First choice: healthy and not `avoid`; then healthy `avoid`.
  for (int pass = 0; pass < 2 && chosen < 0; ++pass) {
    for (int k = 0; k < n; ++k) {
      const int r = (next_ + k) % n;
      if (cool_until_[r] > now) continue;
      if (pass == 0 && r == avoid && n > 1) continue;
      chosen = r;
      break;
    }
  }
  if (chosen < 0) {
    // All cooling down: the one that recovers first, preferring not `avoid`.
    for (int r = 0; r < n; ++r) {
      if (r == avoid && n > 1) continue;
      if (chosen < 0 || cool_until_[r] < cool_until_[chosen]) chosen = r;
    }
  }
  next_ = (chosen + 1) % n;
  ++in_flight_[chosen];
  return chosen;
}

void ReplicaPicker::Release(int replica, bool failed, absl::Time now) {
  absl::MutexLock lock(&mu_);
  --in_flight_[replica];
  if (!failed) {
    consecutive_failures_[replica] = 0;
    cool_until_[replica] = absl::InfinitePast();
    return;
  }
  const int f = std::min(++consecutive_failures_[replica], 16);
  const absl::Duration cooldown =
      std::min(base_cooldown_ * (int64_t{1} << (f - 1)), max_cooldown_);
  cool_until_[replica] = std::max(cool_until_[replica], now + cooldown);
}

std::vector<int> ReplicaPicker::InFlight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

absl::Time ReplicaPicker::CoolUntil(int replica) const {
  absl::MutexLock lock(&mu_);
  return cool_until_[replica];
}

}  // namespace quantd::batch
