#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace quantd::testing {

std::string BuildDir() {
  if (const char* dir = std::getenv("QUANTD_BINARY_DIR"); dir != nullptr) {
    return dir;
  }
  std::error_code ec;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().parent_path().parent_path().string();
}

std::string QuantdBinary() { return BuildDir() + "/server/quantd"; }

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    std::vector<std::string> args, std::vector<std::string> env) {
  const auto has = [&args](const std::string& flag) {
    for (const auto& a : args) {
      if (absl::StartsWith(a, flag + "=") || a == flag) return true;
    }
    return false;
  };
  if (!has("--port")) args.push_back("--port=0");
  if (!has("--metrics_port")) args.push_back("--metrics_port=0");

  std::vector<std::string> argv_storage = {QuantdBinary()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) env_storage.push_back(*e);
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ServerProcess> process(new ServerProcess());
  process->pid_ = pid;
  const int fd = fds[0];
  ServerProcess* raw = process.get();
  process->reader_ = std::thread([raw, fd] { raw->ReadLoop(fd); });
  auto listening = process->WaitForLog("listening");
  if (!listening.ok()) {
    return absl::Status(
        listening.status().code(),
        absl::StrCat(listening.status().message(), "; output:\n",
                     absl::StrJoin(process->Lines(), "\n")));
  }
  (void)absl::SimpleAtoi((*listening)["port"].get<std::string>(),
                         &process->port_);
  (void)absl::SimpleAtoi((*listening)["metrics_port"].get<std::string>(),
                         &process->metrics_port_);
  return process;
}

void ServerProcess::ReadLoop(int fd) {
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      absl::MutexLock lock(&mu_);
      lines_.push_back(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  close(fd);
  int status = 0;
  waitpid(pid_, &status, 0);
  absl::MutexLock lock(&mu_);
  if (!pending.empty()) lines_.push_back(pending);
  exited_ = true;
  wait_status_ = status;
}

ServerProcess::~ServerProcess() {
  bool exited;
  {
    absl::MutexLock lock(&mu_);
    exited = exited_;
  }
  if (!exited) kill(pid_, SIGKILL);
  if (reader_.joinable()) reader_.join();
}

absl::StatusOr<nlohmann::json> ServerProcess::WaitForLog(
    const std::string& msg,
    const std::vector<std::pair<std::string, std::string>>& match,
    absl::Duration timeout) {
  nlohmann::json found;
  size_t scanned = 0;
  const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (; scanned < lines_.size(); ++scanned) {
      nlohmann::json line = nlohmann::json::parse(lines_[scanned], nullptr,
                                                  /*allow_exceptions=*/false);
      if (!line.is_object() || line.value("msg", "") != msg) continue;
      bool all = true;
      for (const auto& [key, value] : match) {
        if (!line.contains(key) || line[key] != value) all = false;
      }
      if (all) {
        found = std::move(line);
        return true;
      }
    }
    return exited_;
  };
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no log line with msg \"", msg, "\" within ",
                     absl::FormatDuration(timeout)));
  }
  if (found.is_null()) {
    return absl::NotFoundError(
        absl::StrCat("quantd exited before logging \"", msg, "\""));
  }
  return found;
}

std::vector<std::string> ServerProcess::Lines() const {
  absl::MutexLock lock(&mu_);
  return lines_;
}

void ServerProcess::Signal(int signal) { kill(pid_, signal); }

absl::StatusOr<int> ServerProcess::WaitExit(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&exited_), timeout)) {
    return absl::DeadlineExceededError("quantd did not exit in time");
  }
  if (!WIFEXITED(wait_status_)) {
    return absl::InternalError(absl::StrCat(
        "quantd did not exit normally (wait status ", wait_status_, ")"));
  }
  return WEXITSTATUS(wait_status_);
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect to port ", port));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::InternalError("write failed");
  }
  std::string response;
  char buffer[8192];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) {
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return absl::DataLossError("no HTTP body");
  return response.substr(body + 4);
}

double MetricValue(const std::string& exposition, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (!absl::StartsWith(line, series)) continue;
    absl::string_view rest = line.substr(series.size());
    if (rest.empty() || rest[0] != ' ') continue;
    double value = 0;
    if (absl::SimpleAtod(rest.substr(1), &value)) return value;
  }
  return -1;
}

}  // namespace quantd::testing
