// ProgressSink: where a job reports what it is doing.
//
// The pipeline calls Report() from its worker thread at stage boundaries and
// inside long loops; the server's reactor coalesces these into stream writes
// (latest wins, stage changes kept), quantctl draws a progress bar.
#ifndef QUANTD_CORE_RUNTIME_PROGRESS_H_
#define QUANTD_CORE_RUNTIME_PROGRESS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace quantd {

struct Progress {
  std::string stage;    // "import", "calibrate", "select", "export", ...
  double fraction = 0;  // of this stage, in [0, 1]
  std::string message;  // human-readable detail
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void Report(const Progress& progress) = 0;
  // Non-fatal findings the user should see (an op left in float, ...).
  virtual void Warn(absl::string_view message) {}
};

// Discards everything; for callers that do not care.
class NullProgressSink final : public ProgressSink {
 public:
  void Report(const Progress&) override {}
};

}  // namespace quantd

#endif  // QUANTD_CORE_RUNTIME_PROGRESS_H_
