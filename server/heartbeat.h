// One thread that calls every registered callback once per period; used to
// put heartbeat events on idle Quantize streams without a timer per job, and
// (with a 50 ms period) to send the progress a job's pacing held back. With
// nothing registered the thread sleeps.
#ifndef QUANTD_SERVER_HEARTBEAT_H_
#define QUANTD_SERVER_HEARTBEAT_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace quantd::server {

class HeartbeatTicker {
 public:
  explicit HeartbeatTicker(absl::Duration period);
  ~HeartbeatTicker();  // stops and joins the thread

  // Callbacks run on the ticker thread and must be quick. A callback may
  // still run once after Unregister returns if a tick is in progress, so it
  // should hold only weak references.
  int64_t Register(std::function<void()> callback);
  void Unregister(int64_t id);

 private:
  void Loop();

  const absl::Duration period_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, std::function<void()>> callbacks_
      ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_HEARTBEAT_H_
