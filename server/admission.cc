#include "server/admission.h"

#include "absl/strings/str_cat.h"

namespace quantd::server {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Rounds up so that a small job never shows as "0 MiB".
int64_t ToMiB(int64_t bytes) { return (bytes + kMiB - 1) / kMiB; }

}  // namespace

AdmissionTicket::~AdmissionTicket() {
  owner_->Release(running_, memory_bytes_);
}

absl::Status AdmissionTicket::Grow(int64_t more_bytes) {
  if (more_bytes <= 0) return absl::OkStatus();
  absl::Status status = owner_->TryGrow(memory_bytes_ + more_bytes, more_bytes);
  if (status.ok()) memory_bytes_ += more_bytes;
  return status;
}

absl::Status AdmissionTicket::GrowWaiting(int64_t more_bytes,
                                          const CancellationToken* cancel,
                                          const WaitReason& on_wait) {
  if (more_bytes <= 0) return absl::OkStatus();
  absl::Status status = owner_->GrowWaiting(memory_bytes_ + more_bytes,
                                            more_bytes, cancel, on_wait);
  if (status.ok()) memory_bytes_ += more_bytes;
  return status;
}

void AdmissionTicket::MarkRunning() {
  if (running_) return;
  running_ = true;
  owner_->MarkRunning();
}

AdmissionController::AdmissionController(AdmissionLimits limits,
                                         Observer observer)
    : limits_(limits), observer_(std::move(observer)) {}

absl::StatusOr<std::unique_ptr<AdmissionTicket>> AdmissionController::TryAdmit(
    int64_t memory_bytes) {
  if (memory_bytes < 0) memory_bytes = 0;
  int position = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return DrainingError();
    }
    const int in_system = state_.queued + state_.running;
    if (in_system >= limits_.workers + limits_.max_queued_jobs) {
      return absl::ResourceExhaustedError(
          absl::StrCat("job queue full: ", state_.running, " running, ",
                       state_.queued, " queued (--workers=", limits_.workers,
                       ", --max_queued_jobs=", limits_.max_queued_jobs, ")"));
    }
    if (absl::Status s =
            CheckMemoryLocked(memory_bytes, memory_bytes, state_.growing_bytes);
        !s.ok()) {
      return s;
    }
    position =
        in_system < limits_.workers ? 0 : in_system - limits_.workers + 1;
    ++state_.queued;
    state_.memory_bytes += memory_bytes;
  }
  Notify();
  return std::unique_ptr<AdmissionTicket>(
      new AdmissionTicket(this, position, memory_bytes));
}

absl::Status AdmissionController::CheckWholeBudget(int64_t total_bytes) const {
  absl::MutexLock lock(&mu_);
  return CheckMemoryLocked(total_bytes, 0);
}

absl::Status AdmissionController::CheckMemoryLocked(int64_t total_bytes,
                                                    int64_t more_bytes,
                                                    int64_t held_bytes) const {
  if (limits_.max_memory_bytes <= 0) return absl::OkStatus();
  if (total_bytes > limits_.max_memory_bytes) {
    // Not RESOURCE_EXHAUSTED: retrying cannot help.
    return absl::FailedPreconditionError(absl::StrCat(
        "job needs an estimated ", ToMiB(total_bytes),
        " MiB, more than the whole budget (--max_job_memory_mb=",
        limits_.max_memory_bytes / kMiB, "); it can never be admitted here"));
  }
  const int64_t taken = state_.memory_bytes + held_bytes;
  if (taken + more_bytes > limits_.max_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "job needs an estimated ", ToMiB(total_bytes), " MiB but only ",
        (limits_.max_memory_bytes - taken + total_bytes - more_bytes) / kMiB,
        " MiB of the budget are free",
        held_bytes > 0 ? absl::StrCat(" (", ToMiB(held_bytes),
                                      " MiB more are promised to running "
                                      "jobs that wait to grow)")
                       : "",
        " (--max_job_memory_mb=", limits_.max_memory_bytes / kMiB, ")"));
  }
  return absl::OkStatus();
}

absl::Status AdmissionController::TryGrow(int64_t total_bytes,
                                          int64_t more_bytes) {
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckMemoryLocked(total_bytes, more_bytes); !s.ok()) {
      return s;
    }
    state_.memory_bytes += more_bytes;
  }
  Notify();
  return absl::OkStatus();
}

absl::Status AdmissionController::GrowWaiting(
    int64_t total_bytes, int64_t more_bytes, const CancellationToken* cancel,
    const AdmissionTicket::WaitReason& on_wait) {
  // The wait polls the token this often (stages stop within 100 ms).
  constexpr absl::Duration kPoll = absl::Milliseconds(20);
  absl::Status status;
  bool told = on_wait == nullptr;
  {
    absl::MutexLock lock(&mu_);
    ++growing_;
    state_.growing_bytes += more_bytes;
    while (true) {
      status = CheckMemoryLocked(total_bytes, more_bytes);
      if (status.ok()) {
        state_.memory_bytes += more_bytes;
        break;
      }
      if (status.code() != absl::StatusCode::kResourceExhausted) break;
      // Only a running job that does not wait itself frees memory (queued
      // jobs wait for a worker that a growing job holds).
      if (state_.running - growing_ <= 0) {
        status = absl::ResourceExhaustedError(
            absl::StrCat(status.message(),
                         "; every other running job waits for memory too"));
        break;
      }
      if (cancel != nullptr && cancel->IsCancelled()) {
        status = cancel->Check();
        break;
      }
      if (!told) {
        // Outside the lock: the caller may take its own (the reactor's,
        // which it also holds while releasing a ticket). The loop checks
        // again after it.
        told = true;
        mu_.Unlock();
        on_wait(status.message());
        mu_.Lock();
        continue;
      }
      released_.WaitWithTimeout(&mu_, kPoll);
    }
    --growing_;
    state_.growing_bytes -= more_bytes;
  }
  Notify();
  return status;
}

void AdmissionController::StopAdmitting() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

AdmissionController::Snapshot AdmissionController::snapshot() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

void AdmissionController::MarkRunning() {
  {
    absl::MutexLock lock(&mu_);
    --state_.queued;
    ++state_.running;
  }
  Notify();
}

void AdmissionController::Release(bool running, int64_t memory_bytes) {
  {
    absl::MutexLock lock(&mu_);
    if (running) {
      --state_.running;
    } else {
      --state_.queued;
    }
    state_.memory_bytes -= memory_bytes;
  }
  released_.SignalAll();
  Notify();
}

void AdmissionController::Notify() {
  // Under the lock, so that observers see the changes in order.
  absl::MutexLock lock(&mu_);
  if (observer_) observer_(state_);
}

}  // namespace quantd::server
