#include "clients/quantctl/progress_bar.h"

#include <cmath>

namespace quantd::quantctl {

void ProgressBar::Report(const Progress& p) {
  if (quiet_) return;
  absl::MutexLock lock(&mu_);
  if (!tty_) {
    if (p.stage != stage_) {
      stage_ = p.stage;
      std::fprintf(out_, "quantctl: %s %s\n", p.stage.c_str(),
                   p.message.c_str());
      std::fflush(out_);
    }
    return;
  }
  const int width = 30;
  const int filled = static_cast<int>(std::lround(p.fraction * width));
  std::string bar(filled, '#');
  bar.resize(width, '-');
  std::fprintf(out_, "\r%-10s [%s] %3d%% %-40.40s", p.stage.c_str(),
               bar.c_str(), static_cast<int>(std::lround(p.fraction * 100)),
               p.message.c_str());
  mid_line_ = p.fraction < 1.0;
  if (!mid_line_) std::fprintf(out_, "\n");
  std::fflush(out_);
}

void ProgressBar::Warn(absl::string_view message) {
  absl::MutexLock lock(&mu_);
  if (!warned_.emplace(message).second) return;
  std::fprintf(out_, "%squantctl: warning: %.*s\n", mid_line_ ? "\n" : "",
               static_cast<int>(message.size()), message.data());
  mid_line_ = false;
  std::fflush(out_);
}

void ProgressBar::Finish() {
  absl::MutexLock lock(&mu_);
  if (mid_line_) std::fprintf(out_, "\n");
  mid_line_ = false;
  std::fflush(out_);
}

}  // namespace quantd::quantctl
