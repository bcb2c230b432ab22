// Job progress on stderr for `quantctl quantize`: on a terminal a one-line
// bar redrawn in place (`\r` frames); otherwise (a pipe, a CI log) one plain
// line per stage, so logs hold no control characters. Warnings always get a
// line of their own, each message once.
#ifndef QUANTD_CLIENTS_QUANTCTL_PROGRESS_BAR_H_
#define QUANTD_CLIENTS_QUANTCTL_PROGRESS_BAR_H_

#include <cstdio>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/runtime/progress.h"

namespace quantd::quantctl {

class ProgressBar final : public ProgressSink {
 public:
  // `tty`: redraw in place; `quiet`: no progress (warnings still shown).
  ProgressBar(std::FILE* out, bool tty, bool quiet)
      : out_(out), tty_(tty), quiet_(quiet) {}

  void Report(const Progress& p) override;
  void Warn(absl::string_view message) override;
  // Ends a half-drawn bar line (before an error message).
  void Finish();

 private:
  std::FILE* out_;
  const bool tty_, quiet_;
  absl::Mutex mu_;
  bool mid_line_ ABSL_GUARDED_BY(mu_) = false;
  std::string stage_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> warned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace quantd::quantctl

#endif  // QUANTD_CLIENTS_QUANTCTL_PROGRESS_BAR_H_
