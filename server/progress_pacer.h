// Paces one job's progress events: at most one per interval on the stream.
//
// Each progress event costs the job a protobuf, a stream write, a callback
// and a wake-up of the client; a 10 ms job reported eight stages, and those
// writes were most of the service's fixed cost per job (docs/service.md,
// service overhead). A report that comes less than `interval` after the last
// event sent (`accepted` counts) is held; a newer one replaces it; the held
// one goes out at the flusher's next tick, or before a warning or the job's
// end (Close). So a job shorter than the interval sends `accepted`, its last
// stage and its result, and a stage shorter than the interval between two
// others may go unannounced (the result's report times every stage).
//
// The first event of a stage is sent as kept (never replaced in the
// EventCoalescer); later ones of the same stage as droppable. Thread-safe;
// `send` runs under the pacer's lock, so it must not call back into it.
//
// The job's last stage (SendAtOnce) is announced as it begins: its event
// would go out at the end anyway, where it cost a write, and gRPC's
// OnWriteDone on another thread, before the result could follow (~0.3 ms
// of a 10 ms job, docs/service.md). A job that succeeds then drops a held
// report of the stage last sent (Close(true)): the client knows the stage,
// and the result follows.
#ifndef QUANTD_SERVER_PROGRESS_PACER_H_
#define QUANTD_SERVER_PROGRESS_PACER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/heartbeat.h"

namespace quantd::server {

template <typename Event>
class ProgressPacer {
 public:
  using Send = std::function<void(Event event, bool droppable)>;

  // `flusher` ticks every `interval` (nullptr: held events wait for Flush);
  // `on_tick` is registered with it while an event is held and must call
  // Flush (holding only a weak reference to the pacer's owner).
  ProgressPacer(absl::Duration interval, HeartbeatTicker* flusher,
                std::function<void()> on_tick, Send send,
                std::function<absl::Time()> now = &absl::Now)
      : interval_(interval),
        flusher_(flusher),
        on_tick_(std::move(on_tick)),
        send_(std::move(send)),
        now_(std::move(now)) {}
  ~ProgressPacer() { (void)Close(); }

  // An event went out on the stream (`accepted`): the interval starts.
  void Sent() {
    absl::MutexLock lock(&mu_);
    last_sent_ = now_();
  }

  // The first report of `stage` goes out at once, whatever the interval.
  void SendAtOnce(std::string stage) {
    absl::MutexLock lock(&mu_);
    at_once_stage_ = std::move(stage);
  }

  // Sends `event` (a report of `stage`) now, or holds it.
  void Report(Event event, const std::string& stage) {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    const bool starts_last_stage = !at_once_stage_.empty() &&
                                   stage == at_once_stage_ &&
                                   stage != last_stage_;
    if (starts_last_stage || now_() - last_sent_ >= interval_) {
      held_.reset();
      SendLocked(std::move(event), stage);
      return;
    }
    held_.emplace(std::move(event), stage);
    if (flush_id_ < 0 && flusher_ != nullptr) {
      flush_id_ = flusher_->Register(on_tick_);
    }
  }

  // Sends the held event, if any.
  void Flush() {
    absl::MutexLock lock(&mu_);
    Unregister();
    if (!held_.has_value() || closed_) return;
    auto [event, stage] = *std::move(held_);
    held_.reset();
    SendLocked(std::move(event), stage);
  }

  // No more sends: returns the held event (for the caller to post before
  // the stream's end), if any; with `drop_known_stage`, not if its stage is
  // the one last sent.
  std::optional<Event> Close(bool drop_known_stage = false) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    Unregister();
    std::optional<Event> out;
    const bool known = held_.has_value() && !last_stage_.empty() &&
                       held_->second == last_stage_;
    if (held_.has_value() && !(drop_known_stage && known)) {
      out = std::move(held_->first);
    }
    held_.reset();
    return out;
  }

 private:
  void Unregister() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (flush_id_ >= 0) flusher_->Unregister(flush_id_);
    flush_id_ = -1;
  }
  void SendLocked(Event event, const std::string& stage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    last_sent_ = now_();
    const bool same_stage = stage == last_stage_;
    last_stage_ = stage;
    send_(std::move(event), /*droppable=*/same_stage);
  }

  const absl::Duration interval_;
  HeartbeatTicker* const flusher_;
  const std::function<void()> on_tick_;
  const Send send_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  absl::Time last_sent_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string last_stage_ ABSL_GUARDED_BY(mu_);
  std::string at_once_stage_ ABSL_GUARDED_BY(mu_);
  std::optional<std::pair<Event, std::string>> held_ ABSL_GUARDED_BY(mu_);
  int64_t flush_id_ ABSL_GUARDED_BY(mu_) = -1;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_PROGRESS_PACER_H_
