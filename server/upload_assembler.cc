#include "server/upload_assembler.h"

#include "absl/strings/str_cat.h"

namespace quantd::server {

absl::Status UploadAssembler::Begin(int kind, int64_t total_size,
                                    absl::string_view sha256) {
  // v1::UploadKind: UPLOAD_KIND_MODEL = 1, UPLOAD_KIND_SAMPLES = 2 (this
  // library has no generated code).
  if (kind != 1 && kind != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk[0].kind: ", kind,
                     " is not UPLOAD_KIND_MODEL (1) or UPLOAD_KIND_SAMPLES "
                     "(2)"));
  }
  if (total_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upload chunk[0].total_size: ", total_size, ", expected > 0"));
  }
  if (total_size > max_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk[0].total_size: ", total_size,
                     " bytes exceeds the limit of ", max_bytes_, " bytes"));
  }
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(
        "upload chunk[0].sha256: expected 64 lowercase hex digits");
  }
  started_ = true;
  kind_ = kind;
  total_size_ = total_size;
  sha256_ = std::string(sha256);
  data_.reserve(static_cast<size_t>(total_size));
  return absl::OkStatus();
}

absl::Status UploadAssembler::Append(int64_t offset, absl::string_view data) {
  if (!started_) {
    return absl::FailedPreconditionError("upload: chunk before Begin");
  }
  if (offset != received()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk.offset: ", offset, ", expected ", received(),
                     " (chunks must be in order, without gaps)"));
  }
  if (static_cast<int64_t>(data.size()) > total_size_ - received()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk.data: ", received() + data.size(),
                     " bytes so far exceed total_size ", total_size_));
  }
  data_.append(data.data(), data.size());
  hasher_.Update(data);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const std::string>> UploadAssembler::Finish() {
  if (!started_) {
    return absl::InvalidArgumentError("upload: no chunks received");
  }
  if (received() != total_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload: stream ended after ", received(), " of ",
                     total_size_, " bytes"));
  }
  const std::string actual = hasher_.FinishHex();
  if (actual != sha256_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk[0].sha256: content hashes to ", actual,
                     ", not ", sha256_));
  }
  return std::make_shared<const std::string>(std::move(data_));
}

}  // namespace quantd::server
