// A ProgressSink that keeps each stage's fraction from going backwards.
//
// Long stages report from several compute threads; a thread that counted
// sample 2 can reach the sink after the one that counted sample 3, and
// clients then see 3/n followed by 2/n. This wrapper forwards a report only
// if its fraction is not below the last one forwarded for the same stage (a
// new stage starts again from its own first report). Thread-safe; reports
// are forwarded in the order they were checked.
#ifndef QUANTD_CORE_RUNTIME_MONOTONIC_PROGRESS_H_
#define QUANTD_CORE_RUNTIME_MONOTONIC_PROGRESS_H_

#include <mutex>
#include <string>

#include "core/runtime/progress.h"

namespace quantd {

class MonotonicProgressSink final : public ProgressSink {
 public:
  // `next` must outlive this sink; nullptr discards everything.
  explicit MonotonicProgressSink(ProgressSink* next) : next_(next) {}

  void Report(const Progress& progress) override {
    if (next_ == nullptr) return;
    // std::mutex: Debian's Abseil is not TSan-instrumented.
    std::lock_guard<std::mutex> lock(mu_);
    if (progress.stage == stage_ && progress.fraction < fraction_) return;
    stage_ = progress.stage;
    fraction_ = progress.fraction;
    next_->Report(progress);
  }
  void Warn(absl::string_view message) override {
    if (next_ != nullptr) next_->Warn(message);
  }

 private:
  ProgressSink* const next_;
  std::mutex mu_;
  std::string stage_;
  double fraction_ = 0;
};

}  // namespace quantd

#endif  // QUANTD_CORE_RUNTIME_MONOTONIC_PROGRESS_H_
