// Latest-wins coalescing of stream writes, for server-streaming reactors.
//
// gRPC allows one write in flight per stream. Events posted while a write is
// in flight wait in a queue; a droppable event (progress within a stage, a
// heartbeat) replaces a droppable event at the tail of the queue, so a slow
// client sees the latest progress, never a backlog. Kept events (accepted,
// the first progress of each stage, warnings, results) are never dropped.
// Close() finishes the stream once every kept event has been written; the
// last event goes out with the finish (one step for gRPC instead of two).
//
// The Sink's calls happen outside the coalescer's lock, so a sink may call
// back (OnWriteDone) from any thread, even inline.
#ifndef QUANTD_SERVER_EVENT_COALESCER_H_
#define QUANTD_SERVER_EVENT_COALESCER_H_

#include <cstdint>
#include <deque>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace quantd::server {

template <typename Event>
class EventCoalescer {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    // Starts writing *event, which stays valid until OnWriteDone.
    virtual void StartWrite(const Event* event) = 0;
    // Ends the stream; called exactly once, never with a write in flight.
    virtual void Finish(const absl::Status& status) = 0;
    // Writes *event and ends the stream, instead of StartWrite then Finish:
    // no OnWriteDone follows. *event stays valid until the stream is done.
    virtual void WriteAndFinish(const Event* event,
                                const absl::Status& status) = 0;
  };

  explicit EventCoalescer(Sink* sink) : sink_(sink) {}

  void Post(Event event, bool droppable) {
    const Event* to_write = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (closed_ || broken_) return;
      ++posted_;
      if (!in_flight_) {
        in_flight_ = true;
        current_ = std::move(event);
        to_write = &current_;
      } else if (droppable && !queue_.empty() && queue_.back().droppable) {
        queue_.back().event = std::move(event);
        ++dropped_;
      } else {
        queue_.push_back(Queued{std::move(event), droppable});
      }
    }
    if (to_write != nullptr) sink_->StartWrite(to_write);
  }

  // The reactor's OnWriteDone. ok=false means the stream is broken (client
  // gone): pending events are discarded.
  void OnWriteDone(bool ok) {
    const Event* to_write = nullptr;
    bool finish = false;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      in_flight_ = false;
      if (!ok) {
        broken_ = true;
        dropped_ += static_cast<int64_t>(queue_.size());
        queue_.clear();
      }
      if (!queue_.empty()) {
        current_ = std::move(queue_.front().event);
        queue_.pop_front();
        in_flight_ = true;
        to_write = &current_;
      }
      if (closed_ && !finished_ && queue_.empty()) {
        finished_ = true;
        finish = true;
        status = status_;
      }
    }
    Send(to_write, finish, status);
  }

  // Post(event, /*droppable=*/false) then Close(status), as one step: when
  // nothing else is pending, the event and the finish go out together.
  void PostLastAndClose(Event event, absl::Status status) {
    const Event* to_write = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      closed_ = true;
      status_ = status;
      if (!broken_) {
        ++posted_;
        if (in_flight_) {
          queue_.push_back(Queued{std::move(event), false});
        } else {
          in_flight_ = true;
          current_ = std::move(event);
          to_write = &current_;
        }
      }
      if (!in_flight_ || to_write != nullptr) {
        finished_ = true;
        finish = true;
      }
    }
    Send(to_write, finish, status);
  }

  // Finishes with `status` after the queued events; later posts are ignored.
  void Close(absl::Status status) {
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      closed_ = true;
      status_ = status;
      if (!in_flight_) {
        finished_ = true;
        finish = true;
      }
    }
    if (finish) sink_->Finish(status);
  }

  int64_t posted() const {
    absl::MutexLock lock(&mu_);
    return posted_;
  }
  // Events replaced by a later one or discarded on a broken stream.
  int64_t dropped() const {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }

 private:
  // Outside the lock: a write, the finish, or both in one step.
  void Send(const Event* to_write, bool finish, const absl::Status& status) {
    if (to_write != nullptr && finish) {
      sink_->WriteAndFinish(to_write, status);
    } else if (to_write != nullptr) {
      sink_->StartWrite(to_write);
    } else if (finish) {
      sink_->Finish(status);
    }
  }

  struct Queued {
    Event event;
    bool droppable;
  };

  Sink* const sink_;
  mutable absl::Mutex mu_;
  Event current_ ABSL_GUARDED_BY(mu_);
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int64_t posted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_EVENT_COALESCER_H_
