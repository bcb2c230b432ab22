// The end of a batch: DIR/summary.json and the table printed to stdout.
// Per job: status, attempts, time, replica, model size before/after, output
// SQNR, the result digest and the sha256 of every output file.
#ifndef QUANTD_CLIENTS_BATCH_SUMMARY_H_
#define QUANTD_CLIENTS_BATCH_SUMMARY_H_

#include <string>
#include <vector>

#include "clients/batch/batch_runner.h"
#include "nlohmann/json.hpp"

namespace quantd::batch {

struct SummaryInfo {
  std::string manifest;
  std::string out_dir;
  std::vector<std::string> servers;
  int concurrency = 0;
  int retries = 0;
  std::string started_at;  // RFC 3339
  double seconds = 0;
};

nlohmann::json SummaryJson(const SummaryInfo& info,
                           const std::vector<JobOutcome>& outcomes);

// One JSON object per attempt (summary.json and each job's result.json).
nlohmann::json AttemptsJson(const std::vector<AttemptRecord>& attempts);

std::string SummaryTable(const std::vector<JobOutcome>& outcomes);

// 0 when every job is ok or skipped, 130 when the batch was interrupted,
// else 1.
int BatchExitCode(const std::vector<JobOutcome>& outcomes);

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_SUMMARY_H_
