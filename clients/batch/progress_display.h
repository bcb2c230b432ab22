// What `quantctl batch` shows while it runs. On a terminal: log lines
// scroll above one status line redrawn a few times a second
//   [batch] 7/12 done (2 skipped) | 3 running | 1 failed | 1 queued |
//   127.0.0.1:50051 x1  127.0.0.1:50052 x2
// Otherwise (CI, Kubernetes logs): timestamped log lines only, plus a
// status line after every finished job.
#ifndef QUANTD_CLIENTS_BATCH_PROGRESS_DISPLAY_H_
#define QUANTD_CLIENTS_BATCH_PROGRESS_DISPLAY_H_

#include <cstdio>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "clients/batch/batch_runner.h"

namespace quantd::batch {

class ProgressDisplay final : public BatchListener {
 public:
  ProgressDisplay(FILE* out, bool tty);
  ~ProgressDisplay() override;

  // Starts redrawing (terminal only); `runner` must outlive Stop().
  void Start(const BatchRunner* runner);
  void Stop();
  void Log(const std::string& line) override;
  void JobFinished() override;

  static std::string StatusLine(
      const BatchCounts& counts,
      const std::vector<std::pair<std::string, int>>& load);

 private:
  void Redraw() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FILE* const out_;
  const bool tty_;
  absl::Mutex mu_;
  const BatchRunner* runner_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_PROGRESS_DISPLAY_H_
