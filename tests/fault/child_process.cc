#include "tests/fault/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "tests/integration/server_process.h"

namespace quantd::testing {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const Options& options) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    if (options.max_file_bytes.has_value()) {
      signal(SIGXFSZ, SIG_IGN);
      const rlimit limit = {static_cast<rlim_t>(*options.max_file_bytes),
                            static_cast<rlim_t>(*options.max_file_bytes)};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess());
  child->pid_ = pid;
  child->out_ = fdopen(fds[0], "r");
  return child;
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    Kill(SIGKILL);
    Wait();
  }
  if (out_ != nullptr) fclose(out_);
}

std::optional<std::string> ChildProcess::ReadLine() {
  std::string line;
  int c;
  while ((c = fgetc(out_)) != EOF && c != '\n') line.push_back(char(c));
  if (c == EOF && line.empty()) return std::nullopt;
  lines_.push_back(line);
  return line;
}

std::optional<std::string> ChildProcess::ReadUntil(const std::string& prefix) {
  while (std::optional<std::string> line = ReadLine()) {
    if (absl::StartsWith(*line, prefix)) return line;
  }
  return std::nullopt;
}

void ChildProcess::Kill(int signal) {
  if (!reaped_) kill(pid_, signal);
}

int ChildProcess::Wait() {
  if (!reaped_) {
    while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return WIFSIGNALED(status_) ? -WTERMSIG(status_) : -1;
}

std::string BuildPath(const std::string& relative) {
  return BuildDir() + "/" + relative;
}

}  // namespace quantd::testing
