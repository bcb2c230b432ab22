// Runs a batch of quantization jobs over quantd replicas (docs/farm.md).
//
//   BatchRunner runner(options, out_dir.get(), &display);
//   std::vector<JobOutcome> outcomes = runner.Run(jobs);
//
// `concurrency` jobs are in flight at once. Each attempt goes to the next
// replica from ReplicaPicker (round robin, skipping replicas that failed
// recently and, on a retry, the one that just failed); RetryPolicy decides
// whether a failure is retried. A finished job is committed to OutputDir
// before it counts as done, and a job whose DIR/<id>/result.json carries the
// same input digest is skipped, so re-running an interrupted batch neither
// loses nor repeats work. Cancel() (e.g. on SIGINT) cancels running calls;
// their jobs end as "interrupted" with nothing written.
#ifndef QUANTD_CLIENTS_BATCH_BATCH_RUNNER_H_
#define QUANTD_CLIENTS_BATCH_BATCH_RUNNER_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/batch/manifest.h"
#include "clients/batch/output_dir.h"
#include "clients/batch/replica_picker.h"
#include "clients/batch/retry_policy.h"
#include "clients/cpp/channel.h"
#include "clients/cpp/client.h"
#include "nlohmann/json.hpp"

namespace quantd::batch {

struct BatchOptions {
  // One entry per replica ("host:port"); a single "dns:///name:port" entry
  // is one channel that balances over every address with round_robin and
  // re-resolves as replicas come and go.
  std::vector<std::string> servers;
  // TLS and token settings for every channel (the target is ignored).
  client::ChannelOptions channel;
  int concurrency = 4;
  RetryPolicy retry;
  // Per attempt; a job that needs longer fails (it would anywhere).
  absl::Duration attempt_deadline = absl::Hours(1);
  // An idle channel must connect within this; longer counts as a replica
  // failure and is retried elsewhere.
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration base_cooldown = absl::Seconds(1);
  absl::Duration max_cooldown = absl::Seconds(30);
  uint64_t jitter_seed = 0;  // 0 = random
};

enum class JobStatus { kQueued, kOk, kSkipped, kFailed, kInterrupted };
const char* JobStatusName(JobStatus status);

struct AttemptRecord {
  int attempt = 0;
  std::string replica;
  std::string request_id;  // "<job id>/<attempt>"
  std::string server_job_id;
  std::string status;  // "OK" or the status code name
  std::string message;
  double seconds = 0;
  bool retryable = false;
};

struct JobOutcome {
  std::string id;
  int line = 0;
  JobStatus status = JobStatus::kQueued;
  std::vector<AttemptRecord> attempts;  // of this run
  // result.json of the job (this run's or, when skipped, the earlier one).
  nlohmann::json record;
  std::string error;
  double seconds = 0;
};

// Receives log lines (one event each, no newline) and a call after each
// job's counts changed; implementations must be thread-safe.
class BatchListener {
 public:
  virtual ~BatchListener() = default;
  virtual void Log(const std::string& line) = 0;
  virtual void JobFinished() {}
};

struct BatchCounts {
  int total = 0, queued = 0, running = 0, ok = 0, skipped = 0, failed = 0,
      interrupted = 0;
};

class BatchRunner {
 public:
  BatchRunner(BatchOptions options, OutputDir* out, BatchListener* listener);
  ~BatchRunner();

  // Creates the channels; errors name the bad --servers entry.
  absl::Status Connect();
  std::vector<JobOutcome> Run(const std::vector<BatchJob>& jobs);
  void Cancel();
  bool cancelled() const;

  BatchCounts Counts() const;
  // Replica names and their jobs in flight.
  std::vector<std::pair<std::string, int>> ReplicaLoad() const;

 private:
  JobOutcome RunJob(const BatchJob& job);
  // True when the output directory holds an "ok" record of `job` with the
  // same inputs (the record goes into `outcome`); logs a redo otherwise.
  bool DoneEarlier(const BatchJob& job, const std::string& input_digest,
                   JobOutcome* outcome);
  // The call phase of an attempt: `request` on `client` under the attempt's
  // id and deadline, stopped by Cancel(); `runner_cancelled` says whether
  // Cancel() stopped it.
  absl::StatusOr<v1::QuantizeResult> CallReplica(
      client::Client& client, const v1::QuantizeRequest& request,
      AttemptRecord* record, bool* runner_cancelled);
  // Waits until `t` or Cancel(); false when cancelled.
  bool SleepUntil(absl::Time t);
  double UniformDraw();
  // Moves one job out of queued (or running) into `to`; kQueued as `to`
  // means "now running".
  void CountTransition(bool was_running, JobStatus to);

  const BatchOptions options_;
  OutputDir* const out_;
  BatchListener* const listener_;
  std::vector<std::unique_ptr<client::Client>> clients_;
  std::unique_ptr<ReplicaPicker> picker_;

  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<client::CallCanceller*> active_ ABSL_GUARDED_BY(mu_);
  BatchCounts counts_ ABSL_GUARDED_BY(mu_);
  uint64_t rng_state_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_BATCH_RUNNER_H_
