#include "clients/batch/summary.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace quantd::batch {
namespace {

constexpr char kComparedFiles[] =
    "result_digest covers model.qdq.onnx, quantized_graph.pb, "
    "quantized_graph.json and report.json without timings_seconds; "
    "report.html shows wall-clock timings and is not compared";

std::string HumanBytes(double bytes) {
  if (bytes <= 0) return "-";
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrFormat("%.0f %s", bytes, units[u])
                : absl::StrFormat("%.1f %s", bytes, units[u]);
}

}  // namespace

nlohmann::json AttemptsJson(const std::vector<AttemptRecord>& attempts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : attempts) {
    out.push_back({{"attempt", a.attempt},
                   {"replica", a.replica},
                   {"request_id", a.request_id},
                   {"server_job_id", a.server_job_id},
                   {"status", a.status},
                   {"message", a.message},
                   {"retryable", a.retryable},
                   {"seconds", a.seconds}});
  }
  return out;
}

nlohmann::json SummaryJson(const SummaryInfo& info,
                           const std::vector<JobOutcome>& outcomes) {
  std::map<std::string, int> counts = {
      {"ok", 0}, {"skipped", 0}, {"failed", 0}, {"interrupted", 0}};
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& o : outcomes) {
    ++counts[JobStatusName(o.status)];
    nlohmann::json j = {{"id", o.id},
                        {"line", o.line},
                        {"status", JobStatusName(o.status)},
                        {"attempts", static_cast<int>(o.attempts.size())},
                        {"seconds", o.seconds}};
    j["attempt_log"] = AttemptsJson(o.attempts);
    if (!o.error.empty()) j["error"] = o.error;
    if (o.record.is_object()) {
      for (const char* key :
           {"replica", "request_id", "model_bytes", "qdq_onnx_bytes",
            "output_sqnr_db", "tpc", "tpc_digest", "input_digest",
            "result_digest", "files", "finished_at"}) {
        if (o.record.contains(key)) j[key] = o.record[key];
      }
      if (o.status == JobStatus::kSkipped) {
        j["done_earlier"] = {{"attempts", o.record.value("attempt_count", 0)},
                             {"seconds", o.record.value("seconds", 0.0)}};
      }
    }
    jobs.push_back(std::move(j));
  }
  return {{"version", 1},
          {"manifest", info.manifest},
          {"out", info.out_dir},
          {"servers", info.servers},
          {"concurrency", info.concurrency},
          {"retries", info.retries},
          {"started_at", info.started_at},
          {"seconds", info.seconds},
          {"total", static_cast<int>(outcomes.size())},
          {"counts", counts},
          {"compared_files", kComparedFiles},
          {"jobs", std::move(jobs)}};
}

std::string SummaryTable(const std::vector<JobOutcome>& outcomes) {
  size_t id_width = 3;
  size_t replica_width = 7;
  for (const auto& o : outcomes) {
    id_width = std::max(id_width, o.id.size());
    if (o.record.is_object()) {
      replica_width =
          std::max(replica_width, o.record.value("replica", "").size());
    }
  }
  const auto w = [](size_t n) { return static_cast<int>(n); };
  std::string table = absl::StrFormat(
      "%-*s  %-11s  %8s  %8s  %-*s  %11s  %11s  %9s  %-12s\n", w(id_width),
      "JOB", "STATUS", "ATTEMPTS", "TIME(s)", w(replica_width), "REPLICA",
      "SIZE BEFORE", "SIZE AFTER", "SQNR(dB)", "DIGEST");
  for (const auto& o : outcomes) {
    std::string replica = "-", digest = "-", sqnr = "-";
    double before = 0, after = 0;
    if (o.record.is_object()) {
      replica = o.record.value("replica", "-");
      digest = o.record.value("result_digest", "-").substr(0, 12);
      before = o.record.value("model_bytes", 0.0);
      after = o.record.value("qdq_onnx_bytes", 0.0);
      if (o.record.contains("output_sqnr_db") &&
          o.record["output_sqnr_db"].is_number()) {
        sqnr =
            absl::StrFormat("%.2f", o.record["output_sqnr_db"].get<double>());
      }
    }
    absl::StrAppendFormat(
        &table, "%-*s  %-11s  %8d  %8.2f  %-*s  %11s  %11s  %9s  %-12s\n",
        w(id_width), o.id, JobStatusName(o.status),
        static_cast<int>(o.attempts.size()), o.seconds, w(replica_width),
        replica, HumanBytes(before), HumanBytes(after), sqnr, digest);
    if (!o.error.empty()) absl::StrAppend(&table, "    error: ", o.error, "\n");
  }
  return table;
}

int BatchExitCode(const std::vector<JobOutcome>& outcomes) {
  bool failed = false, interrupted = false;
  for (const auto& o : outcomes) {
    failed |= o.status == JobStatus::kFailed;
    interrupted |= o.status == JobStatus::kInterrupted;
  }
  if (interrupted) return 130;
  return failed ? 1 : 0;
}

}  // namespace quantd::batch
