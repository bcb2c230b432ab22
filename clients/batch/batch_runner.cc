#include "clients/batch/batch_runner.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "clients/batch/digests.h"
#include "clients/batch/job_files.h"
#include "clients/batch/summary.h"

namespace quantd::batch {
namespace {

std::string CodeName(const absl::Status& status) {
  return absl::StatusCodeToString(status.code());
}

// Connect phase: the channel must become ready in time. A channel that
// fails to connect (replica down) fails the attempt at once instead of
// waiting out the connect timeout in gRPC's reconnect backoff. OK when the
// channel is ready; `unreachable` says the replica is down.
absl::Status WaitForChannel(client::Client& client,
                            absl::Duration connect_timeout,
                            const std::string& replica, bool* unreachable_out) {
  absl::Status status;
  const absl::Time connect_deadline = absl::Now() + connect_timeout;
  grpc::Channel& channel = *client.channel();
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state == GRPC_CHANNEL_IDLE || state == GRPC_CHANNEL_CONNECTING) {
    if (!channel.WaitForStateChange(state,
                                    absl::ToChronoTime(connect_deadline))) {
      break;
    }
    state = channel.GetState(/*try_to_connect=*/true);
  }
  const bool unreachable =
      state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN;
  if (unreachable) {
    status = absl::UnavailableError(
        absl::StrCat("replica ", replica, ": not reachable"));
  } else if (state != GRPC_CHANNEL_READY) {
    status = absl::DeadlineExceededError(
        absl::StrCat("replica ", replica, ": no connection within ",
                     absl::FormatDuration(connect_timeout)));
  }
  *unreachable_out = unreachable;
  return status;
}

// The output record of a job that attempt `attempt` (`rec`) completed.
nlohmann::json SuccessRecord(const BatchJob& job,
                             const v1::QuantizeResult& result,
                             const AttemptRecord& rec, int attempt,
                             const std::vector<AttemptRecord>& attempts,
                             const std::string& input_digest,
                             int64_t model_bytes, absl::Time job_start,
                             const std::vector<FileDigest>& digests) {
  nlohmann::json record = {
      {"id", job.id},
      {"line", job.line},
      {"status", "ok"},
      {"input_digest", input_digest},
      {"model", job.files.model},
      {"tpc", result.tpc()},
      {"tpc_digest", result.tpc_digest()},
      {"replica", rec.replica},
      {"request_id", rec.request_id},
      {"server_job_id", rec.server_job_id},
      {"attempt_count", attempt},
      {"seconds", absl::ToDoubleSeconds(absl::Now() - job_start)},
      {"model_bytes", model_bytes},
      {"qdq_onnx_bytes", static_cast<int64_t>(result.qdq_onnx().size())},
      {"output_sqnr_db", result.output_sqnr_db()},
      {"result_digest", ResultDigest(digests)},
      {"finished_at",
       absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone())}};
  record["attempts"] = AttemptsJson(attempts);
  nlohmann::json file_list = nlohmann::json::array();
  for (const auto& d : digests) {
    nlohmann::json f = {{"name", d.name},
                        {"bytes", d.bytes},
                        {"sha256", d.sha256},
                        {"deterministic", d.deterministic}};
    if (!d.compared_sha256.empty() && d.compared_sha256 != d.sha256) {
      f["sha256_without_timings"] = d.compared_sha256;
    }
    file_list.push_back(std::move(f));
  }
  record["files"] = std::move(file_list);
  return record;
}

}  // namespace

const char* JobStatusName(JobStatus status) {
  switch (status) {
    case JobStatus::kQueued:
      return "queued";
    case JobStatus::kOk:
      return "ok";
    case JobStatus::kSkipped:
      return "skipped";
    case JobStatus::kFailed:
      return "failed";
    case JobStatus::kInterrupted:
      return "interrupted";
  }
  return "unknown";
}

BatchRunner::BatchRunner(BatchOptions options, OutputDir* out,
                         BatchListener* listener)
    : options_(std::move(options)), out_(out), listener_(listener) {
  rng_state_ =
      options_.jitter_seed != 0 ? options_.jitter_seed : std::random_device()();
}

BatchRunner::~BatchRunner() = default;

absl::Status BatchRunner::Connect() {
  if (options_.servers.empty()) {
    return absl::InvalidArgumentError("--servers: no replica given");
  }
  for (const auto& target : options_.servers) {
    client::ChannelOptions channel = options_.channel;
    channel.target = target;
    // With one channel per replica the runner fails over itself; gRPC's
    // transparent retries would only retry the same replica. A dns:///
    // channel's retries go to the next address, so they stay on.
    channel.enable_retries = absl::StartsWith(target, "dns:");
    auto client = client::Client::Create(channel);
    if (!client.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--servers entry '", target, "': ", client.status().message()));
    }
    clients_.push_back(*std::move(client));
  }
  picker_ = std::make_unique<ReplicaPicker>(
      options_.servers, options_.base_cooldown, options_.max_cooldown);
  return absl::OkStatus();
}

void BatchRunner::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  for (client::CallCanceller* c : active_) c->Cancel();
}

bool BatchRunner::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

BatchCounts BatchRunner::Counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

std::vector<std::pair<std::string, int>> BatchRunner::ReplicaLoad() const {
  std::vector<std::pair<std::string, int>> load;
  if (picker_ == nullptr) return load;
  const std::vector<int> in_flight = picker_->InFlight();
  for (int r = 0; r < picker_->size(); ++r) {
    load.emplace_back(picker_->name(r), in_flight[r]);
  }
  return load;
}

bool BatchRunner::SleepUntil(absl::Time t) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithDeadline(absl::Condition(&cancelled_), t);
  return !cancelled_;
}

double BatchRunner::UniformDraw() {
  absl::MutexLock lock(&mu_);
  // splitmix64: a tiny generator whose state lives under mu_.
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

void BatchRunner::CountTransition(bool was_running, JobStatus to) {
  absl::MutexLock lock(&mu_);
  --(was_running ? counts_.running : counts_.queued);
  switch (to) {
    case JobStatus::kQueued:  // queued -> running
      ++counts_.running;
      break;
    case JobStatus::kOk:
      ++counts_.ok;
      break;
    case JobStatus::kSkipped:
      ++counts_.skipped;
      break;
    case JobStatus::kFailed:
      ++counts_.failed;
      break;
    case JobStatus::kInterrupted:
      ++counts_.interrupted;
      break;
  }
}

std::vector<JobOutcome> BatchRunner::Run(const std::vector<BatchJob>& jobs) {
  {
    absl::MutexLock lock(&mu_);
    counts_ = BatchCounts();
    counts_.total = static_cast<int>(jobs.size());
    counts_.queued = counts_.total;
  }
  std::vector<JobOutcome> outcomes(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    outcomes[i].id = jobs[i].id;
    outcomes[i].line = jobs[i].line;
  }
  std::atomic<size_t> next{0};
  const int workers = std::max(
      1, std::min(options_.concurrency, static_cast<int>(jobs.size())));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      while (!cancelled()) {
        const size_t i = next.fetch_add(1);
        if (i >= jobs.size()) break;
        outcomes[i] = RunJob(jobs[i]);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Jobs never started because of Cancel().
  for (auto& o : outcomes) {
    if (o.status == JobStatus::kQueued) {
      o.status = JobStatus::kInterrupted;
      o.error = "not started: the batch was interrupted";
      CountTransition(/*was_running=*/false, JobStatus::kInterrupted);
    }
  }
  return outcomes;
}

bool BatchRunner::DoneEarlier(const BatchJob& job,
                              const std::string& input_digest,
                              JobOutcome* outcome) {
  if (std::optional<nlohmann::json> record = out_->ReadRecord(job.id)) {
    if (record->value("status", "") == "ok" &&
        record->value("input_digest", "") == input_digest) {
      outcome->record = *std::move(record);
      listener_->Log(absl::StrCat("job ", job.id,
                                  " skipped: done earlier with the same "
                                  "inputs"));
      return true;
    }
    listener_->Log(absl::StrCat("job ", job.id,
                                ": inputs changed since its output was "
                                "written; redoing it"));
  }
  return false;
}

absl::StatusOr<v1::QuantizeResult> BatchRunner::CallReplica(
    client::Client& client, const v1::QuantizeRequest& request,
    AttemptRecord* record, bool* runner_cancelled) {
  AttemptRecord& rec = *record;
  client::CallCanceller canceller;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) canceller.Cancel();
    active_.insert(&canceller);
  }
  v1::QuantizeRequest attempt_request = request;
  attempt_request.set_request_id(rec.request_id);
  absl::StatusOr<v1::QuantizeResult> result =
      client.Quantize(std::move(attempt_request),
                      [&rec](const v1::JobEvent& event) {
                        if (event.has_accepted())
                          rec.server_job_id = event.job_id();
                      },
                      {.deadline = absl::Now() + options_.attempt_deadline,
                       .canceller = &canceller});
  {
    absl::MutexLock lock(&mu_);
    active_.erase(&canceller);
  }
  *runner_cancelled = canceller.cancelled();
  return result;
}

JobOutcome BatchRunner::RunJob(const BatchJob& job) {
  JobOutcome outcome;
  outcome.id = job.id;
  outcome.line = job.line;
  const absl::Time job_start = absl::Now();
  CountTransition(/*was_running=*/false, JobStatus::kQueued);
  const auto finish = [&](JobStatus status, std::string error) {
    outcome.status = status;
    outcome.error = std::move(error);
    outcome.seconds = absl::ToDoubleSeconds(absl::Now() - job_start);
    CountTransition(/*was_running=*/true, status);
    listener_->JobFinished();
    return std::move(outcome);
  };

  auto built = BuildQuantizeRequest(job.files);
  if (!built.ok()) {
    const std::string error =
        absl::StrCat("line ", job.line, ": ", CodeName(built.status()), ": ",
                     built.status().message());
    listener_->Log(absl::StrCat("job ", job.id, " failed: ", error));
    return finish(JobStatus::kFailed, error);
  }
  v1::QuantizeRequest request = *std::move(built);
  const std::string input_digest = InputDigest(request);
  const int64_t model_bytes = static_cast<int64_t>(request.onnx_model().size());
  if (DoneEarlier(job, input_digest, &outcome)) {
    return finish(JobStatus::kSkipped, "");
  }

  int previous = -1;
  int unreachable_skips = 0;
  const int max_attempts = 1 + std::max(0, options_.retry.max_retries);
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    if (cancelled()) {
      return finish(JobStatus::kInterrupted,
                    "interrupted before attempt " + std::to_string(attempt));
    }
    const int replica = picker_->Acquire(previous, absl::Now());
    // Every replica is cooling down: wait for the first to recover rather
    // than spend an attempt on a replica that just failed.
    if (!SleepUntil(picker_->CoolUntil(replica))) {
      picker_->Release(replica, /*failed=*/false, absl::Now());
      return finish(JobStatus::kInterrupted, "interrupted");
    }
    AttemptRecord rec;
    rec.attempt = attempt;
    rec.replica = picker_->name(replica);
    rec.request_id = absl::StrCat(job.id, "/", attempt);
    listener_->Log(absl::StrCat("job ", job.id, " attempt ", attempt, " on ",
                                rec.replica));
    const absl::Time attempt_start = absl::Now();
    client::Client& client = *clients_[replica];

    // Connect phase: the channel must become ready in time.
    AttemptPhase phase = AttemptPhase::kConnect;
    bool unreachable = false;
    const absl::Status status = WaitForChannel(client, options_.connect_timeout,
                                               rec.replica, &unreachable);
    if (unreachable && unreachable_skips < picker_->size()) {
      // A replica that is down costs the job no attempt: rest it and take
      // the next one (at most once per replica and job).
      ++unreachable_skips;
      picker_->Release(replica, /*failed=*/true, absl::Now());
      listener_->Log(absl::StrCat("job ", job.id, ": ", status.message(),
                                  "; trying another replica"));
      --attempt;
      continue;
    }
    // Retries avoid the replica of the last real attempt.
    previous = replica;
    // Holds the connect failure until the call replaces it.
    absl::StatusOr<v1::QuantizeResult> result =
        status.ok() ? absl::UnknownError("not sent") : status;
    bool runner_cancelled = false;
    if (status.ok()) {
      phase = AttemptPhase::kCall;
      result = CallReplica(client, request, &rec, &runner_cancelled);
    }
    rec.seconds = absl::ToDoubleSeconds(absl::Now() - attempt_start);
    rec.status = result.ok() ? "OK" : CodeName(result.status());
    rec.message = result.ok() ? "" : std::string(result.status().message());
    rec.retryable =
        !result.ok() && IsRetryable(result.status(), phase, runner_cancelled);
    picker_->Release(replica, rec.retryable, absl::Now());
    outcome.attempts.push_back(rec);

    if (result.ok()) {
      auto files = ResultFiles(*result);
      if (!files.ok()) {
        return finish(
            JobStatus::kFailed,
            absl::StrCat("formatting the result: ", files.status().message()));
      }
      const std::vector<FileDigest> digests = DigestFiles(*files);
      nlohmann::json record =
          SuccessRecord(job, *result, rec, attempt, outcome.attempts,
                        input_digest, model_bytes, job_start, digests);
      absl::Status st = out_->Commit(job.id, *files, record);
      if (!st.ok()) {
        const std::string error =
            absl::StrCat("writing the output: ", st.message());
        listener_->Log(absl::StrCat("job ", job.id, " failed: ", error));
        return finish(JobStatus::kFailed, error);
      }
      listener_->Log(absl::StrFormat(
          "job %s done on %s in %.2fs (attempt %d), output SQNR %.2f dB",
          job.id, rec.replica, rec.seconds, attempt, result->output_sqnr_db()));
      outcome.record = std::move(record);
      return finish(JobStatus::kOk, "");
    }
    const std::string error =
        absl::StrCat(rec.status, ": ", rec.message, " (", rec.replica, ")");
    if (runner_cancelled || cancelled()) {
      listener_->Log(absl::StrCat("job ", job.id, " interrupted"));
      return finish(JobStatus::kInterrupted, "interrupted: " + error);
    }
    if (!rec.retryable) {
      listener_->Log(absl::StrCat("job ", job.id, " failed: ", error));
      return finish(JobStatus::kFailed, error);
    }
    if (attempt == max_attempts) {
      listener_->Log(absl::StrCat("job ", job.id, " failed after ", attempt,
                                  " attempts: ", error));
      return finish(
          JobStatus::kFailed,
          absl::StrCat("gave up after ", attempt, " attempts; last: ", error));
    }
    const absl::Duration wait = options_.retry.Backoff(attempt, UniformDraw());
    listener_->Log(absl::StrCat("job ", job.id, " attempt ", attempt,
                                " failed: ", error, "; retrying in ",
                                absl::FormatDuration(wait)));
    if (!SleepUntil(absl::Now() + wait)) {
      return finish(JobStatus::kInterrupted, "interrupted: " + error);
    }
  }
  return finish(JobStatus::kFailed, "no attempt made");
}

}  // namespace quantd::batch
