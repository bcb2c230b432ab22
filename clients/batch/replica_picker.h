// Chooses the replica for each job attempt: round robin over the replicas,
// skipping those that failed recently (a cool-down that doubles with each
// consecutive failure) and, for a retry, the replica the last attempt
// failed on. Counts jobs in flight per replica for the progress display.
// Thread-safe; time is passed in so tests need no clock.
#ifndef QUANTD_CLIENTS_BATCH_REPLICA_PICKER_H_
#define QUANTD_CLIENTS_BATCH_REPLICA_PICKER_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace quantd::batch {

class ReplicaPicker {
 public:
  ReplicaPicker(std::vector<std::string> names, absl::Duration base_cooldown,
                absl::Duration max_cooldown);

  // The next replica (index) and counts it in flight. `avoid` (-1 = none)
  // is used only when every other replica is cooling down; when all are,
  // the one that recovers first is taken.
  int Acquire(int avoid, absl::Time now);
  // Ends an attempt; a failure starts or extends the replica's cool-down,
  // a success clears it.
  void Release(int replica, bool failed, absl::Time now);

  const std::string& name(int replica) const { return names_[replica]; }
  int size() const { return static_cast<int>(names_.size()); }
  std::vector<int> InFlight() const;
  // When the replica's cool-down ends (InfinitePast when it has none).
  absl::Time CoolUntil(int replica) const;

 private:
  const std::vector<std::string> names_;
  const absl::Duration base_cooldown_;
  const absl::Duration max_cooldown_;
  mutable absl::Mutex mu_;
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> in_flight_ ABSL_GUARDED_BY(mu_);
  std::vector<int> consecutive_failures_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> cool_until_ ABSL_GUARDED_BY(mu_);
};

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_REPLICA_PICKER_H_
