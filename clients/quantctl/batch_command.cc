// quantctl batch --manifest FILE --servers dns:///HOST:PORT|HOST:PORT,...
//     --out DIR [--concurrency N] [--retries N] [--deadline-seconds S]
//     [--connect-timeout-seconds S] [--plain] [TLS/token flags]
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
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "clients/batch/batch_runner.h"
#include "clients/batch/manifest.h"
#include "clients/batch/output_dir.h"
#include "clients/batch/progress_display.h"
#include "clients/batch/summary.h"
#include "clients/quantctl/command.h"
#include "core/util/json_text.h"

namespace quantd::quantctl {
namespace {

constexpr char kUsage[] =
    "batch --manifest FILE --servers dns:///HOST:PORT|HOST:PORT,... --out DIR "
    "[--concurrency N] [--retries N] [--deadline-seconds S] "
    "[--connect-timeout-seconds S] [--plain] [--tls] [--tls_ca FILE] "
    "[--tls_cert FILE --tls_key FILE] [--token_file FILE]";

int UsageError(const std::string& message) {
  return quantctl::UsageError("batch", kUsage, message);
}

struct Args {
  std::string manifest, servers, out;
  batch::BatchOptions options;
  bool plain = false;
};

bool ParseInt(const std::string& text, int lo, int hi, int* out) {
  return absl::SimpleAtoi(text, out) && *out >= lo && *out <= hi;
}

int ParseArgs(const std::vector<std::string>& args, Args* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    const auto value = [&](std::string* dst) {
      return TakeFlagValue(args, &i, dst);
    };
    int n = 0;
    if (a == "--manifest") {
      if (!value(&out->manifest)) return UsageError("--manifest needs a file");
    } else if (a == "--servers") {
      if (!value(&out->servers)) return UsageError("--servers needs targets");
    } else if (a == "--out") {
      if (!value(&out->out)) return UsageError("--out needs a folder");
    } else if (a == "--concurrency") {
      if (!value(&v) || !ParseInt(v, 1, 1024, &n)) {
        return UsageError("--concurrency needs an integer in [1, 1024]");
      }
      out->options.concurrency = n;
    } else if (a == "--retries") {
      if (!value(&v) || !ParseInt(v, 0, 100, &n)) {
        return UsageError("--retries needs an integer in [0, 100]");
      }
      out->options.retry.max_retries = n;
    } else if (a == "--deadline-seconds") {
      if (!value(&v) || !ParseInt(v, 1, 7 * 86400, &n)) {
        return UsageError("--deadline-seconds needs an integer in [1, 604800]");
      }
      out->options.attempt_deadline = absl::Seconds(n);
    } else if (a == "--connect-timeout-seconds") {
      if (!value(&v) || !ParseInt(v, 1, 3600, &n)) {
        return UsageError(
            "--connect-timeout-seconds needs an integer in [1, 3600]");
      }
      out->options.connect_timeout = absl::Seconds(n);
    } else if (a == "--plain") {
      out->plain = true;
    } else if (a == "--tls") {
      out->options.channel.use_tls = true;
    } else if (a == "--tls_ca") {
      if (!value(&out->options.channel.tls_ca)) {
        return UsageError("--tls_ca needs a file");
      }
      out->options.channel.use_tls = true;
    } else if (a == "--tls_cert") {
      if (!value(&out->options.channel.tls_cert)) {
        return UsageError("--tls_cert needs a file");
      }
    } else if (a == "--tls_key") {
      if (!value(&out->options.channel.tls_key)) {
        return UsageError("--tls_key needs a file");
      }
    } else if (a == "--token_file") {
      if (!value(&v)) return UsageError("--token_file needs a file");
      std::ifstream in(v);
      if (!in)
        return UsageError(absl::StrCat("--token_file ", v, ": cannot read"));
      std::stringstream buffer;
      buffer << in.rdbuf();
      out->options.channel.auth_token =
          std::string(absl::StripAsciiWhitespace(buffer.str()));
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: quantctl %s\n", kUsage);
      return -1;
    } else {
      return UsageError(absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (out->manifest.empty()) return UsageError("--manifest is required");
  if (out->servers.empty()) return UsageError("--servers is required");
  if (out->out.empty()) return UsageError("--out is required");
  for (absl::string_view s : absl::StrSplit(out->servers, ',')) {
    s = absl::StripAsciiWhitespace(s);
    if (s.empty()) return UsageError("--servers has an empty entry");
    out->options.servers.emplace_back(s);
  }
  return 0;
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
  if (int rc = ParseArgs(argv, &args); rc != 0) return rc < 0 ? 0 : rc;
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

QUANTCTL_COMMAND(batch, kUsage, RunBatch);

}  // namespace quantd::quantctl
