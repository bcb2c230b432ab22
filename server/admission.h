// Admission control for quantization jobs.
//
// A job is admitted if a worker or a queue slot is free and its memory
// estimate fits the budget left by the jobs already admitted; otherwise it
// is rejected at once with RESOURCE_EXHAUSTED (never parked on a gRPC
// thread). While the server drains, admission answers UNAVAILABLE so clients
// retry on another replica.
#ifndef QUANTD_SERVER_ADMISSION_H_
#define QUANTD_SERVER_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/runtime/cancellation.h"

namespace quantd::server {

// The words of every call refused because the server drains (jobs, uploads,
// admission after the drain began), with UNAVAILABLE: DrainingError().
inline constexpr char kDrainingMessage[] =
    "server is draining and accepts no new calls; retry on another replica";
inline absl::Status DrainingError() {
  return absl::UnavailableError(kDrainingMessage);
}

struct AdmissionLimits {
  int workers = 1;               // jobs that run at once
  int max_queued_jobs = 0;       // jobs that may wait for a worker
  int64_t max_memory_bytes = 0;  // budget of all admitted jobs; 0 = none
};

class AdmissionController;

// A job's place in the system. Destroying it frees the place and the memory.
class AdmissionTicket {
 public:
  ~AdmissionTicket();
  AdmissionTicket(const AdmissionTicket&) = delete;
  AdmissionTicket& operator=(const AdmissionTicket&) = delete;

  // 0 when a worker was free at admission, else 1-based place in the queue.
  int queue_position() const { return queue_position_; }
  int64_t memory_bytes() const { return memory_bytes_; }
  // The job left the queue and runs on a worker.
  void MarkRunning();
  // Raises the ticket's memory by `more_bytes` (a finer estimate than the
  // one admitted) with TryAdmit's memory checks and messages; on error the
  // ticket keeps what it had.
  absl::Status Grow(int64_t more_bytes);
  // Raises the ticket's memory by `more_bytes` for a part of the job it
  // reaches while running (JobMemoryStage): waits for other jobs to release
  // theirs, polling `cancel` (its status ends the wait). New admissions
  // leave room for a waiting growth. FAILED_PRECONDITION when the whole need
  // exceeds the budget; RESOURCE_EXHAUSTED when no running job is left that
  // could free memory (every other one waits to grow too: the last to ask
  // gives way). On error the ticket keeps what it had. `on_wait`, if set, is
  // called once, without the controller's lock, when the growth does not
  // fit at once and waits, with the reason (the RESOURCE_EXHAUSTED message
  // TryAdmit would give).
  using WaitReason = std::function<void(absl::string_view reason)>;
  absl::Status GrowWaiting(int64_t more_bytes, const CancellationToken* cancel,
                           const WaitReason& on_wait = nullptr);

 private:
  friend class AdmissionController;
  AdmissionTicket(AdmissionController* owner, int queue_position,
                  int64_t memory_bytes)
      : owner_(owner),
        queue_position_(queue_position),
        memory_bytes_(memory_bytes) {}

  AdmissionController* owner_;
  int queue_position_;
  int64_t memory_bytes_;
  bool running_ = false;
};

class AdmissionController {
 public:
  struct Snapshot {
    int queued = 0;   // admitted, waiting for a worker
    int running = 0;  // on a worker
    int64_t memory_bytes = 0;
    // More memory promised to running jobs that wait to grow
    // (AdmissionTicket::GrowWaiting).
    int64_t growing_bytes = 0;
  };
  // Called after every change, under the controller's lock (so calls come
  // in order); it must not call back into the controller.
  using Observer = std::function<void(const Snapshot&)>;

  explicit AdmissionController(AdmissionLimits limits,
                               Observer observer = nullptr);
  // Every ticket must be destroyed before the controller.
  ~AdmissionController() = default;

  // RESOURCE_EXHAUSTED naming the limit that is full (retrying later may
  // succeed); FAILED_PRECONDITION when the job alone needs more than the
  // whole budget (it never fits); UNAVAILABLE while draining.
  absl::StatusOr<std::unique_ptr<AdmissionTicket>> TryAdmit(
      int64_t memory_bytes);

  // FAILED_PRECONDITION when a job needing `total_bytes` at its peak could
  // never be admitted here (its stages reserved later included: a job is
  // refused before its work, not when it reaches them).
  absl::Status CheckWholeBudget(int64_t total_bytes) const;

  // New jobs get UNAVAILABLE from now on.
  void StopAdmitting();

  Snapshot snapshot() const;
  const AdmissionLimits& limits() const { return limits_; }

 private:
  friend class AdmissionTicket;
  void Release(bool running, int64_t memory_bytes);
  absl::Status TryGrow(int64_t total_bytes, int64_t more_bytes);
  absl::Status GrowWaiting(int64_t total_bytes, int64_t more_bytes,
                           const CancellationToken* cancel,
                           const AdmissionTicket::WaitReason& on_wait);
  // Whether `more_bytes` more fit besides `held_bytes` promised to others;
  // `total_bytes` is the job's whole need.
  absl::Status CheckMemoryLocked(int64_t total_bytes, int64_t more_bytes,
                                 int64_t held_bytes = 0) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkRunning();
  void Notify();

  const AdmissionLimits limits_;
  const Observer observer_;
  mutable absl::Mutex mu_;
  Snapshot state_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Running jobs waiting in GrowWaiting (their bytes: the snapshot's).
  int growing_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar released_;  // signalled when memory is released
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_ADMISSION_H_
