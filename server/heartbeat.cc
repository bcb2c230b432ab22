#include "server/heartbeat.h"

#include <vector>

namespace quantd::server {

HeartbeatTicker::HeartbeatTicker(absl::Duration period)
    : period_(period), thread_([this] { Loop(); }) {}

HeartbeatTicker::~HeartbeatTicker() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

int64_t HeartbeatTicker::Register(std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  callbacks_[id] = std::move(callback);
  return id;
}

void HeartbeatTicker::Unregister(int64_t id) {
  absl::MutexLock lock(&mu_);
  callbacks_.erase(id);
}

void HeartbeatTicker::Loop() {
  while (true) {
    std::vector<std::function<void()>> due;
    {
      absl::MutexLock lock(&mu_);
      // Nothing registered: sleep until a registration (or the stop), so an
      // idle server's short-period ticker (progress pacing) costs nothing.
      mu_.Await(absl::Condition(
          +[](HeartbeatTicker* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) {
            return t->stopping_ || !t->callbacks_.empty();
          },
          this));
      // Wakes early only to stop; the timeout is the period itself.
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_);
      if (stopping_) return;
      due.reserve(callbacks_.size());
      for (const auto& [id, callback] : callbacks_) due.push_back(callback);
    }
    for (const auto& callback : due) callback();
  }
}

}  // namespace quantd::server
