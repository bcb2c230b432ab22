#include "clients/batch/progress_display.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace quantd::batch {

ProgressDisplay::ProgressDisplay(FILE* out, bool tty) : out_(out), tty_(tty) {}

ProgressDisplay::~ProgressDisplay() { Stop(); }

std::string ProgressDisplay::StatusLine(
    const BatchCounts& c,
    const std::vector<std::pair<std::string, int>>& load) {
  std::string line = absl::StrFormat(
      "[batch] %d/%d done (%d skipped) | %d running | %d failed | %d queued",
      c.ok + c.skipped, c.total, c.skipped, c.running, c.failed, c.queued);
  if (c.interrupted > 0)
    absl::StrAppend(&line, " | ", c.interrupted, " interrupted");
  if (!load.empty()) absl::StrAppend(&line, " |");
  for (const auto& [name, n] : load) {
    absl::StrAppend(&line, " ", name, " x", n);
  }
  return line;
}

void ProgressDisplay::Start(const BatchRunner* runner) {
  absl::MutexLock lock(&mu_);
  runner_ = runner;
  if (!tty_) return;
  thread_ = std::thread([this] {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      Redraw();
      mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Milliseconds(250));
    }
    Redraw();
    std::fputc('\n', out_);
    std::fflush(out_);
  });
}

void ProgressDisplay::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  runner_ = nullptr;
}

void ProgressDisplay::Redraw() {
  if (runner_ == nullptr) return;
  std::fprintf(out_, "\r\033[K%s",
               StatusLine(runner_->Counts(), runner_->ReplicaLoad()).c_str());
  std::fflush(out_);
}

void ProgressDisplay::Log(const std::string& line) {
  absl::MutexLock lock(&mu_);
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s\n", line.c_str());
    Redraw();
    return;
  }
  std::fprintf(
      out_, "%s %s\n",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone())
          .c_str(),
      line.c_str());
  std::fflush(out_);
}

void ProgressDisplay::JobFinished() {
  absl::MutexLock lock(&mu_);
  // On a terminal the redraw thread shows it.
  if (tty_ || runner_ == nullptr) return;
  std::fprintf(out_, "%s\n",
               StatusLine(runner_->Counts(), runner_->ReplicaLoad()).c_str());
  std::fflush(out_);
}

}  // namespace quantd::batch
