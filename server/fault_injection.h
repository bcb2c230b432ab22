// --fault_injection: makes chosen job stages misbehave, so that tests can
// drive cancellation, deadlines and internal errors to an exact stage
// instead of racing the clock. Off unless the flag is set; the server logs
// a warning at startup when it is.
//
//   stall:STAGE  the job waits at the start of STAGE until it is cancelled
//                (client gone, deadline, shutdown)
//   stall:STAGE@N  the same, inside STAGE: at its N-th progress report
//                (N >= 1, counted from the stage's start, which is not one),
//                after a warning event that says so; the stage then runs
//                on to its next cancellation check
//   fail:STAGE   the stage returns INTERNAL
//   throw:STAGE  the stage throws (the worker's catch path)
//
// Several are separated by commas: "stall:calibrate,fail:export".
#ifndef QUANTD_SERVER_FAULT_INJECTION_H_
#define QUANTD_SERVER_FAULT_INJECTION_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"

namespace quantd::server {

class FaultInjection {
 public:
  enum class Kind { kStall, kFail, kThrow };

  // Empty spec: no faults.
  static absl::StatusOr<FaultInjection> Parse(const std::string& spec);

  bool empty() const { return faults_.empty() && stall_ticks_.empty(); }
  std::string ToString() const;

  // The JobContext::on_stage_start hook for one job; `token` outlives it.
  std::function<absl::Status(const std::string&)> HookFor(
      const CancellationToken* token) const;

  // The job's progress sink with the stall:STAGE@N faults in front of
  // `inner`, or nullptr when there are none; `inner` and `token` outlive it.
  std::unique_ptr<ProgressSink> WrapProgress(
      ProgressSink* inner, const CancellationToken* token) const;

 private:
  std::map<std::string, Kind> faults_;      // by stage, at its start
  std::map<std::string, int> stall_ticks_;  // stall:STAGE@N: N by stage
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_FAULT_INJECTION_H_
