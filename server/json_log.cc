#include "server/json_log.h"

#include <grpc/support/log.h>

#include <cstdio>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/util/json_text.h"
#include "nlohmann/json.hpp"

namespace quantd::server {
namespace {

absl::Mutex log_mu;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

void GrpcLogToJson(gpr_log_func_args* args) {
  LogLevel level = LogLevel::kInfo;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) level = LogLevel::kError;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = LogLevel::kDebug;
  Log(level, args->message,
      {{"source", "grpc"},
       {"file", std::string(args->file) + ":" + std::to_string(args->line)}});
}

}  // namespace

std::string FormatLogLine(LogLevel level, absl::string_view msg,
                          const LogFields& fields) {
  nlohmann::ordered_json line;
  line["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(),
                                absl::UTCTimeZone());
  line["level"] = LevelName(level);
  line["msg"] = std::string(msg);
  for (const auto& [key, value] : fields) {
    if (!value.empty()) line[key] = value;
  }
  return JsonText(line, -1);  // a client-chosen id need not be UTF-8
}

void Log(LogLevel level, absl::string_view msg, const LogFields& fields) {
  const std::string line = FormatLogLine(level, msg, fields);
  absl::MutexLock lock(&log_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void RouteGrpcLogsToJson() { gpr_set_log_function(GrpcLogToJson); }

}  // namespace quantd::server
