// Reassembles one chunked upload and checks it against its claimed size and
// digest. The claimed size is checked against the cap before anything is
// allocated, and every chunk must continue exactly where the last ended.
#ifndef QUANTD_SERVER_UPLOAD_ASSEMBLER_H_
#define QUANTD_SERVER_UPLOAD_ASSEMBLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/sha256.h"

namespace quantd::server {

class UploadAssembler {
 public:
  explicit UploadAssembler(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // First chunk's header. INVALID_ARGUMENT naming the field at fault.
  absl::Status Begin(int kind, int64_t total_size, absl::string_view sha256);
  absl::Status Append(int64_t offset, absl::string_view data);
  // All bytes arrived and their sha256 matches the claimed one.
  absl::StatusOr<std::shared_ptr<const std::string>> Finish();

  bool started() const { return started_; }
  int kind() const { return kind_; }
  const std::string& sha256() const { return sha256_; }
  int64_t received() const { return static_cast<int64_t>(data_.size()); }

 private:
  const int64_t max_bytes_;
  bool started_ = false;
  int kind_ = 0;
  int64_t total_size_ = 0;
  std::string sha256_;
  std::string data_;
  Sha256Hasher hasher_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_UPLOAD_ASSEMBLER_H_
