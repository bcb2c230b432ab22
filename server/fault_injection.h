// --fault_injection: makes chosen job stages misbehave, so that tests can
// drive cancellation, deadlines and internal errors to an exact stage
// instead of racing the clock. Off unless the flag is set; the server logs
// a warning at startup when it is.
//
//   stall:STAGE  the job waits at the start of STAGE until it is cancelled
//                (client gone, deadline, shutdown)
//   fail:STAGE   the stage returns INTERNAL
//   throw:STAGE  the stage throws (the worker's catch path)
//
// Several are separated by commas: "stall:calibrate,fail:export".
#ifndef QUANTD_SERVER_FAULT_INJECTION_H_
#define QUANTD_SERVER_FAULT_INJECTION_H_

#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/cancellation.h"

namespace quantd::server {

class FaultInjection {
 public:
  enum class Kind { kStall, kFail, kThrow };

  // Empty spec: no faults.
  static absl::StatusOr<FaultInjection> Parse(const std::string& spec);

  bool empty() const { return faults_.empty(); }
  std::string ToString() const;

  // The JobContext::on_stage_start hook for one job; `token` outlives it.
  std::function<absl::Status(const std::string&)> HookFor(
      const CancellationToken* token) const;

 private:
  std::map<std::string, Kind> faults_;  // by stage
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_FAULT_INJECTION_H_
