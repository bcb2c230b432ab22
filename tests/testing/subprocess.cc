#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace quantd::testing {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    std::vector<std::string> argv_storage, const Options& options) {
  if (argv_storage.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) env_storage.push_back(*e);
  env_storage.insert(env_storage.end(), options.env.begin(), options.env.end());
  // Everything the child needs is built before fork: only async-signal-safe
  // calls between fork and exec.
  std::vector<char*> argv, envp;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const bool limit_files = options.max_file_bytes.has_value();
  const rlimit file_limit = {
      static_cast<rlim_t>(options.max_file_bytes.value_or(0)),
      static_cast<rlim_t>(options.max_file_bytes.value_or(0))};

  // O_CLOEXEC: children started later do not inherit this pipe.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    if (limit_files) {
      signal(SIGXFSZ, SIG_IGN);
      setrlimit(RLIMIT_FSIZE, &file_limit);
    }
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<Subprocess> child(new Subprocess());
  child->pid_ = pid;
  Subprocess* raw = child.get();
  const int fd = fds[0];
  child->reader_ = std::thread([raw, fd] { raw->ReadLoop(fd); });
  return child;
}

void Subprocess::ReadLoop(int fd) {
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    absl::MutexLock lock(&mu_);
    output_.append(buffer, static_cast<size_t>(n));
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      lines_.push_back(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  close(fd);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  absl::MutexLock lock(&mu_);
  if (!pending.empty()) lines_.push_back(pending);
  exited_ = true;
  wait_status_ = status;
}

Subprocess::~Subprocess() {
  bool exited;
  {
    absl::MutexLock lock(&mu_);
    exited = exited_;
  }
  if (!exited) kill(pid_, SIGKILL);
  if (reader_.joinable()) reader_.join();
}

void Subprocess::Signal(int signal) {
  absl::MutexLock lock(&mu_);
  if (!exited_) kill(pid_, signal);  // a reaped pid may be reused
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&exited_), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("still running after ", absl::FormatDuration(timeout)));
  }
  if (WIFSIGNALED(wait_status_)) return -WTERMSIG(wait_status_);
  return WEXITSTATUS(wait_status_);
}

std::string Subprocess::Output() const {
  absl::MutexLock lock(&mu_);
  return output_;
}

std::vector<std::string> Subprocess::Lines() const {
  absl::MutexLock lock(&mu_);
  return lines_;
}

absl::StatusOr<Subprocess::Line> Subprocess::WaitForLine(
    const std::function<bool(absl::string_view)>& match, absl::Duration timeout,
    size_t from) {
  std::optional<Line> found;
  size_t scanned = from;
  const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (; scanned < lines_.size(); ++scanned) {
      if (match(lines_[scanned])) {
        found = Line{scanned, lines_[scanned]};
        return true;
      }
    }
    return exited_;
  };
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "no matching output line within ", absl::FormatDuration(timeout)));
  }
  if (!found.has_value()) {
    return absl::NotFoundError("the output ended without a matching line");
  }
  return *std::move(found);
}

std::optional<std::string> Subprocess::ReadLine() {
  auto line = WaitForLine([](absl::string_view) { return true; },
                          absl::InfiniteDuration(), next_line_);
  if (!line.ok()) return std::nullopt;
  next_line_ = line->index + 1;
  return std::move(line->text);
}

std::optional<std::string> Subprocess::ReadUntil(const std::string& prefix) {
  while (std::optional<std::string> line = ReadLine()) {
    if (absl::StartsWith(*line, prefix)) return line;
  }
  return std::nullopt;
}

}  // namespace quantd::testing
