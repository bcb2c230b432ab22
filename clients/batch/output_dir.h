// The output folder of a batch: DIR/<job id>/ per finished job, each made
// visible at once (files written and fsynced in DIR/.tmp-<id>-<pid>/, then
// the folder renamed into place), with DIR/<id>/result.json as the record
// that the job is done (its input digest, attempts, output digests).
// DIR/.lock (flock) keeps a second runner out while this one is alive; the
// kernel drops the lock when the process dies, however it dies, and leftover
// .tmp-* folders are removed when the next runner opens DIR. A .lock that is
// not a plain file of its own (a symbolic or hard link planted in DIR) is
// refused, never followed: taking the lock truncates it.
#ifndef QUANTD_CLIENTS_BATCH_OUTPUT_DIR_H_
#define QUANTD_CLIENTS_BATCH_OUTPUT_DIR_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace quantd::batch {

inline constexpr char kRecordFile[] = "result.json";
// DIR/summary.json: no job id may take this name (manifest.h).
inline constexpr char kSummaryFile[] = "summary.json";

class OutputDir {
 public:
  // Creates `dir` if needed and takes its lock: FAILED_PRECONDITION naming
  // the holder's pid when another runner has it, or naming DIR/.lock when it
  // is a link or not a regular file.
  static absl::StatusOr<std::unique_ptr<OutputDir>> Open(
      const std::string& dir);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return dir_; }

  // DIR/<id>/result.json, or nullopt when the job has no complete output.
  std::optional<nlohmann::json> ReadRecord(const std::string& id) const;

  // Publishes `files` plus result.json (`record`) as DIR/<id>/, replacing
  // an older output of the same job.
  absl::Status Commit(
      const std::string& id,
      const std::vector<std::pair<std::string, std::string>>& files,
      const nlohmann::json& record);

  // DIR/<name> written atomically and fsynced.
  absl::Status WriteFile(const std::string& name, const std::string& bytes);

 private:
  OutputDir(std::string dir, int lock_fd)
      : dir_(std::move(dir)), lock_fd_(lock_fd) {}

  const std::string dir_;
  const int lock_fd_;
};

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_OUTPUT_DIR_H_
