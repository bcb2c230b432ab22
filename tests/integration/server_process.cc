#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

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

std::string BuildPath(const std::string& relative) {
  return BuildDir() + "/" + relative;
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

  std::vector<std::string> argv = {QuantdBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto started = Subprocess::Start(std::move(argv), {.env = std::move(env)});
  if (!started.ok()) return started.status();
  std::unique_ptr<ServerProcess> process(new ServerProcess());
  process->process_ = *std::move(started);
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

absl::StatusOr<nlohmann::json> ServerProcess::WaitForLog(
    const std::string& msg,
    const std::vector<std::pair<std::string, std::string>>& match,
    absl::Duration timeout) {
  nlohmann::json found;
  auto line = process_->WaitForLine(
      [&](absl::string_view text) {
        nlohmann::json line = nlohmann::json::parse(text, nullptr,
                                                    /*allow_exceptions=*/false);
        if (!line.is_object() || line.value("msg", "") != msg) return false;
        for (const auto& [key, value] : match) {
          if (!line.contains(key) || line[key] != value) return false;
        }
        found = std::move(line);
        return true;
      },
      timeout);
  if (absl::IsDeadlineExceeded(line.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("no log line with msg \"", msg, "\" within ",
                     absl::FormatDuration(timeout)));
  }
  if (!line.ok()) {
    return absl::NotFoundError(
        absl::StrCat("quantd exited before logging \"", msg, "\""));
  }
  return found;
}

absl::StatusOr<int> ServerProcess::WaitExit(absl::Duration timeout) {
  auto code = process_->Wait(timeout);
  if (absl::IsDeadlineExceeded(code.status())) {
    return absl::DeadlineExceededError("quantd did not exit in time");
  }
  if (!code.ok()) return code.status();
  if (*code < 0) {
    return absl::InternalError(
        absl::StrCat("quantd did not exit normally (signal ", -*code, ")"));
  }
  return *code;
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

absl::StatusOr<std::string> WaitForMetrics(
    int port, const std::vector<std::pair<std::string, double>>& minimums,
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<std::string> text = HttpGet(port, "/metrics");
    if (!text.ok()) return text;
    std::string missing;
    for (const auto& [series, minimum] : minimums) {
      if (MetricValue(*text, series) < minimum) {
        missing = series;
        break;
      }
    }
    if (missing.empty()) return text;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("metric ", missing, " below its minimum"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace quantd::testing
