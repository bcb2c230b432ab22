#include "tests/load/load_runner.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "core/util/status_macros.h"

namespace quantd::load {
namespace {

struct Outcome {
  bool accepted = false;
  absl::Status status;
  double seconds = 0;
};

// `on_accepted` (may be null) runs once the job is accepted or has ended.
Outcome RunOne(client::Client& client, const v1::QuantizeRequest& request,
               const std::function<void()>& on_accepted = nullptr) {
  Outcome out;
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::QuantizeResult> result =
      client.Quantize(request, [&](const v1::JobEvent& event) {
        if (event.has_accepted()) {
          out.accepted = true;
          if (on_accepted) on_accepted();
        }
      });
  out.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  out.status = result.status();
  if (!out.accepted && on_accepted) on_accepted();
  return out;
}

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of values <= it.
  const double rank = std::ceil(p / 100.0 * values.size());
  const size_t index = static_cast<size_t>(std::max(1.0, rank)) - 1;
  return values[std::min(index, values.size() - 1)];
}

absl::StatusOr<int64_t> ProcStatusKb(pid_t pid, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  if (!in) {
    // The server is gone: it crashed or exited; its stderr tells why.
    return absl::NotFoundError(
        absl::StrCat("no /proc/", pid,
                     ": the server exited during the load (see its stderr)"));
  }
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, field + ":")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, " kB");
    int64_t kb = 0;
    if (absl::SimpleAtoi(rest, &kb)) return kb;
  }
  return absl::NotFoundError(absl::StrCat(field, " not in /proc/", pid));
}

absl::StatusOr<pid_t> FindChild(const std::string& name) {
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return absl::InternalError("cannot open /proc");
  pid_t found = -1;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string text((std::istreambuf_iterator<char>(stat)),
                     std::istreambuf_iterator<char>());
    // pid (comm) state ppid ...; comm may hold spaces, so split at ')'.
    const size_t open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string comm = text.substr(open + 1, close - open - 1);
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == self && comm == name) {
      found = pid;
      break;
    }
  }
  closedir(proc);
  if (found < 0) {
    return absl::NotFoundError(absl::StrCat("no child process '", name, "'"));
  }
  return found;
}

std::string LoadReport::ToString() const {
  std::string out = absl::StrFormat(
      "submitted %d, accepted %d, rejected %d (RESOURCE_EXHAUSTED), "
      "completed %d (large %d); latency of accepted small jobs p50 %.3f s, "
      "p90 %.3f s, p99 %.3f s, max %.3f s; wall %.1f s; server peak RSS "
      "%.1f MiB, RSS after %.1f MiB",
      submitted, accepted, rejected, completed, large_completed, p50_seconds,
      p90_seconds, p99_seconds, max_seconds, wall_seconds, peak_rss_kb / 1024.0,
      rss_kb / 1024.0);
  for (const auto& [code, count] : failures) {
    absl::StrAppend(&out, "; failed ", code, " x", count, ": ",
                    failure_messages.at(code));
  }
  return out;
}

absl::StatusOr<LoadReport> RunLoad(const std::string& target, pid_t server_pid,
                                   const LoadSpec& spec) {
  if (auto rss = ProcStatusKb(server_pid, "VmHWM"); !rss.ok()) {
    return rss.status();
  }
  absl::Mutex mu;
  LoadReport report;
  std::vector<double> latencies;
  const auto record = [&](const Outcome& o, bool large) {
    absl::MutexLock lock(&mu);
    ++report.submitted;
    if (o.accepted) ++report.accepted;
    if (o.status.ok()) {
      ++report.completed;
      if (large) ++report.large_completed;
      if (!large) latencies.push_back(o.seconds);
      return;
    }
    if (!o.accepted &&
        o.status.code() == absl::StatusCode::kResourceExhausted) {
      ++report.rejected;
      return;
    }
    const std::string code = absl::StatusCodeToString(o.status.code());
    ++report.failures[code];
    report.failure_messages.emplace(code, std::string(o.status.message()));
  };

  std::vector<std::unique_ptr<client::Client>> clients;
  for (int i = 0; i < spec.streams + static_cast<int>(spec.large_jobs.size());
       ++i) {
    auto c = client::Client::Create({.target = target});
    if (!c.ok()) return c.status();
    clients.push_back(*std::move(c));
  }
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  // Large jobs first, each waited for until accepted (or ended), so that
  // they hold workers while the streams arrive.
  int large_started = 0;
  for (size_t i = 0; i < spec.large_jobs.size(); ++i) {
    threads.emplace_back([&, i] {
      record(RunOne(*clients[spec.streams + i], spec.large_jobs[i],
                    [&] {
                      absl::MutexLock lock(&mu);
                      ++large_started;
                    }),
             true);
    });
    const int want = static_cast<int>(i) + 1;
    const auto started = [&] { return large_started >= want; };
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&started));
  }
  for (int s = 0; s < spec.streams; ++s) {
    threads.emplace_back([&, s] {
      for (int j = 0; j < spec.jobs_per_stream; ++j) {
        v1::QuantizeRequest request = spec.small_job;
        request.set_request_id(absl::StrCat("load-", s, "-", j));
        record(RunOne(*clients[s], request), false);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  report.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  report.p50_seconds = Percentile(latencies, 50);
  report.p90_seconds = Percentile(latencies, 90);
  report.p99_seconds = Percentile(latencies, 99);
  report.max_seconds = Percentile(latencies, 100);
  ASSIGN_OR_RETURN(report.peak_rss_kb, ProcStatusKb(server_pid, "VmHWM"));
  ASSIGN_OR_RETURN(report.rss_kb, ProcStatusKb(server_pid, "VmRSS"));
  return report;
}

}  // namespace quantd::load
