// A job in a forked child, so that its peak RSS is its own: the child runs
// `body` and sends back the line it returns; the parent measures wall time,
// CPU (the child's user + sys) and the child's peak RSS (ru_maxrss).
#ifndef QUANTD_BENCH_JOB_IN_CHILD_H_
#define QUANTD_BENCH_JOB_IN_CHILD_H_

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace quantd::bench {

struct ChildRun {
  bool ok = false;  // exit 0 and a line back
  double wall_s = 0, cpu_s = 0;
  int64_t peak_rss = 0;  // bytes
  std::string line;      // what `body` returned
};

// `body` runs in the child; an empty return marks a failure (the child
// prints why on stderr).
inline ChildRun RunInChild(const std::function<std::string()>& body) {
  ChildRun run;
  int fds[2];
  if (pipe(fds) != 0) return run;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string line = body();
    if (line.empty()) _exit(1);
    const ssize_t n = write(fds[1], line.data(), line.size());
    _exit(n == static_cast<ssize_t>(line.size()) ? 0 : 1);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n = 0;
  while (pid > 0 && (n = read(fds[0], buf, sizeof(buf))) > 0) {
    run.line.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return run;
  run.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  run.cpu_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 +
              usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
  run.peak_rss = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !run.line.empty();
  return run;
}

}  // namespace quantd::bench

#endif  // QUANTD_BENCH_JOB_IN_CHILD_H_
