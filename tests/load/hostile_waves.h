// Hostile waves against what quantd holds before admission
// (docs/reliability.md): unfinished uploads, oversized models and huge
// inline TPC JSON, each sent by `n` concurrent attackers on their own
// channels. A wave reports the server's RSS before it, its peak during it
// (VmHWM, reset first through /proc/PID/clear_refs) and after it, and how the
// calls ended.
#ifndef QUANTD_TESTS_LOAD_HOSTILE_WAVES_H_
#define QUANTD_TESTS_LOAD_HOSTILE_WAVES_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "quantd/v1/job.pb.h"

namespace quantd::load {

struct WaveReport {
  std::string name;
  int64_t before_kb = 0;  // VmRSS before the wave
  int64_t peak_kb = 0;    // VmHWM during the wave
  int64_t after_kb = 0;   // VmRSS once every call ended
  // Status code name -> calls; one message per code.
  std::map<std::string, int64_t> codes;
  std::map<std::string, std::string> messages;

  std::string ToString() const;
};

// `n` UploadModel streams, each claiming `claimed_bytes` and sending up to
// `sent_bytes` of them in 1 MiB chunks without finishing. Once every stream
// has sent its bytes or been rejected, the peak is read and the streams that
// are still open are cancelled (their code is then CANCELLED).
absl::StatusOr<WaveReport> UnfinishedUploadsWave(const std::string& target,
                                                 pid_t server_pid, int n,
                                                 int64_t claimed_bytes,
                                                 int64_t sent_bytes);

// `n` concurrent Quantize calls of `request` (e.g. a model larger than the
// job budget, or an inline TPC JSON over --max_tpc_json_kb), each read to
// its end.
absl::StatusOr<WaveReport> QuantizeWave(const std::string& name,
                                        const std::string& target,
                                        pid_t server_pid, int n,
                                        const v1::QuantizeRequest& request);

// Resets VmHWM of `pid` to its current RSS (Linux clear_refs "5").
absl::Status ResetPeakRss(pid_t pid);

}  // namespace quantd::load

#endif  // QUANTD_TESTS_LOAD_HOSTILE_WAVES_H_
