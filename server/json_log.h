// JSON-lines logging on stdout: one object per event with ts, level, msg and
// whatever context fields apply (job_id, request_id, peer, ...), so that log
// pipelines can index them without parsing free text.
#ifndef QUANTD_SERVER_JSON_LOG_H_
#define QUANTD_SERVER_JSON_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace quantd::server {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

using LogFields = std::vector<std::pair<std::string, std::string>>;

// Formats one log line (without the newline); exposed for tests.
std::string FormatLogLine(LogLevel level, absl::string_view msg,
                          const LogFields& fields);

// Writes one line to stdout and flushes it; thread-safe.
void Log(LogLevel level, absl::string_view msg, const LogFields& fields = {});

// Sends gRPC core's own log messages through Log().
void RouteGrpcLogsToJson();

}  // namespace quantd::server

#endif  // QUANTD_SERVER_JSON_LOG_H_
