// quantctl batch --manifest FILE --servers dns:///HOST:PORT|HOST:PORT,...
//     --out DIR [--concurrency N] [--retries N] [--deadline D]
//     [--connect-timeout D] [--plain] [TLS/token flags]
//
// Runs every job of a manifest (JSON lines or CSV, see docs/farm.md) over
// quantd replicas with retries, writes DIR/<job>/ atomically and
// DIR/summary.json, and prints a summary table. Re-running the same command
// skips finished jobs. SIGINT/SIGTERM cancel running jobs (nothing partial
// is written); exit code 0 = all done, 1 = a job failed, 130 = interrupted,
// 2 = usage error.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "clients/batch/batch_runner.h"
#include "clients/batch/manifest.h"
#include "clients/batch/output_dir.h"
#include "clients/batch/progress_display.h"
#include "clients/batch/summary.h"
#include "clients/quantctl/channel_flags.h"
#include "clients/quantctl/command.h"
#include "core/util/json_text.h"

namespace quantd::quantctl {
namespace {

struct Args {
  std::string manifest, servers, out;
  batch::BatchOptions options;
  bool plain = false;
};

FlagSet Flags(Args* a) {
  FlagSet f("batch", "--manifest FILE --servers TARGET[,TARGET...] --out DIR",
            "Runs every job of a manifest (JSON lines or CSV; options as in "
            "quantize, docs/farm.md) over quantd replicas with retries, "
            "writes DIR/<job>/ and DIR/summary.json; re-running skips "
            "finished jobs. Exit 0 = all done, 1 = a job failed, 130 = "
            "interrupted.");
  f.String("manifest", "FILE", "the jobs, one per line (.jsonl or .csv)",
           &a->manifest, {.required = true});
  f.String("servers", "TARGET[,TARGET...]",
           "quantd replicas: HOST:PORT list or dns:///NAME:PORT", &a->servers,
           {.required = true});
  f.String("out", "DIR", "output folder (one subfolder per job)", &a->out,
           {.required = true});
  f.Int("concurrency", "jobs in flight at once", 1, 1024,
        &a->options.concurrency,
        {.default_text = std::to_string(a->options.concurrency)});
  f.Int("retries", "retries of a job after a replica failure", 0, 100,
        &a->options.retry.max_retries,
        {.default_text = std::to_string(a->options.retry.max_retries)});
  f.Duration(
      "deadline", "deadline of one attempt of a job (e.g. 30m)",
      &a->options.attempt_deadline,
      {.aliases = {"deadline-seconds", "deadline_seconds"},
       .default_text = absl::FormatDuration(a->options.attempt_deadline)});
  f.Duration(
      "connect-timeout", "wait this long for a replica to be ready",
      &a->options.connect_timeout,
      {.aliases = {"connect-timeout-seconds", "connect_timeout_seconds"},
       .default_text = absl::FormatDuration(a->options.connect_timeout)});
  f.Bool("plain", "log lines instead of the live table, even on a terminal",
         &a->plain);
  AddChannelFlags(&f, &a->options.channel);
  return f;
}

std::vector<FlagSet> FlagSets() {
  static Args unused;
  return {Flags(&unused)};
}

int ParseArgs(const std::vector<std::string>& args, Args* out) {
  const FlagSet flags = Flags(out);
  if (int rc = flags.ParseOrExit(args); rc >= 0) return rc;
  for (absl::string_view s : absl::StrSplit(out->servers, ',')) {
    s = absl::StripAsciiWhitespace(s);
    if (s.empty()) {
      std::fprintf(stderr, "quantctl batch: --servers has an empty entry\n%s",
                   flags.Usage().c_str());
      return 2;
    }
    out->options.servers.emplace_back(s);
  }
  return -1;
}

// Turns SIGINT/SIGTERM/SIGHUP into BatchRunner::Cancel() on a thread of its
// own (sigtimedwait, never a signal handler). The signals are blocked before
// any other thread exists, so every thread inherits the mask.
class SignalWatcher {
 public:
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SignalWatcher() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  void Watch(batch::BatchRunner* runner, batch::BatchListener* log) {
    thread_ = std::thread([this, runner, log] {
      const timespec poll = {0, 100 * 1000 * 1000};
      int received = 0;
      while (true) {
        {
          absl::MutexLock lock(&mu_);
          if (stop_) return;
        }
        const int sig = sigtimedwait(&set_, nullptr, &poll);
        if (sig <= 0) continue;
        if (++received == 1) {
          log->Log(absl::StrCat("received signal ", sig,
                                ": cancelling running jobs (again to quit "
                                "at once)"));
          runner->Cancel();
        } else {
          _exit(130);
        }
      }
    });
  }

 private:
  sigset_t set_, old_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

int RunBatch(const std::vector<std::string>& argv) {
  Args args;
  if (int rc = ParseArgs(argv, &args); rc >= 0) return rc;
  auto jobs = batch::ReadManifest(args.manifest);
  if (!jobs.ok()) {
    std::fprintf(stderr, "quantctl batch: %s\n",
                 std::string(jobs.status().message()).c_str());
    return 2;
  }
  auto out = batch::OutputDir::Open(args.out);
  if (!out.ok()) {
    std::fprintf(stderr, "quantctl batch: %s\n",
                 std::string(out.status().message()).c_str());
    return 1;
  }
  SignalWatcher signals;  // before any thread starts
  const absl::Time start = absl::Now();
  batch::ProgressDisplay display(stderr, !args.plain && isatty(2) != 0);
  batch::BatchRunner runner(args.options, out->get(), &display);
  if (absl::Status st = runner.Connect(); !st.ok()) {
    std::fprintf(stderr, "quantctl batch: %s\n",
                 std::string(st.message()).c_str());
    return 2;
  }
  signals.Watch(&runner, &display);
  display.Log(absl::StrCat("batch of ", jobs->size(), " jobs from ",
                           args.manifest, " over ", args.options.servers.size(),
                           " target(s), concurrency ", args.options.concurrency,
                           ", retries ", args.options.retry.max_retries));
  display.Start(&runner);
  std::vector<batch::JobOutcome> outcomes = runner.Run(*jobs);
  display.Stop();

  batch::SummaryInfo info;
  info.manifest = args.manifest;
  info.out_dir = args.out;
  info.servers = args.options.servers;
  info.concurrency = args.options.concurrency;
  info.retries = args.options.retry.max_retries;
  info.started_at =
      absl::FormatTime(absl::RFC3339_sec, start, absl::UTCTimeZone());
  info.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const nlohmann::json summary = batch::SummaryJson(info, outcomes);
  absl::Status st =
      (*out)->WriteFile(batch::kSummaryFile, JsonText(summary, 2) + "\n");
  std::printf("%s", batch::SummaryTable(outcomes).c_str());
  const auto& counts = summary["counts"];
  std::printf(
      "%d ok, %d skipped, %d failed, %d interrupted in %.1fs; "
      "summary: %s/summary.json\n",
      counts["ok"].get<int>(), counts["skipped"].get<int>(),
      counts["failed"].get<int>(), counts["interrupted"].get<int>(),
      info.seconds, args.out.c_str());
  std::fflush(stdout);
  if (!st.ok()) {
    std::fprintf(stderr, "quantctl batch: writing summary.json: %s\n",
                 std::string(st.message()).c_str());
    return 1;
  }
  return batch::BatchExitCode(outcomes);
}

}  // namespace

QUANTCTL_COMMAND(batch, "run a manifest of jobs over quantd replicas", RunBatch,
                 FlagSets);

}  // namespace quantd::quantctl
