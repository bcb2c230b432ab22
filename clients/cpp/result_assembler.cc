#include "clients/cpp/result_assembler.h"

#include "absl/strings/str_cat.h"
#include "core/util/sha256.h"

namespace quantd::client {

absl::Status ResultAssembler::Add(const v1::ResultChunk& chunk) {
  if (!started_) {
    if (chunk.total_size() <= 0 || chunk.total_size() > max_bytes_) {
      return absl::DataLossError(absl::StrCat(
          "result_chunk.total_size: ", chunk.total_size(), " out of range"));
    }
    started_ = true;
    total_size_ = chunk.total_size();
    sha256_ = chunk.sha256();
    data_.reserve(static_cast<size_t>(total_size_));
  }
  if (chunk.total_size() != total_size_ || chunk.sha256() != sha256_) {
    return absl::DataLossError(
        "result_chunk: total_size or sha256 changed between chunks");
  }
  if (chunk.offset() != static_cast<int64_t>(data_.size())) {
    return absl::DataLossError(absl::StrCat(
        "result_chunk.offset: ", chunk.offset(), ", expected ", data_.size()));
  }
  if (static_cast<int64_t>(chunk.data().size()) >
      total_size_ - static_cast<int64_t>(data_.size())) {
    return absl::DataLossError("result_chunk.data: more than total_size");
  }
  data_.append(chunk.data());
  return absl::OkStatus();
}

absl::Status ResultAssembler::FinishInto(
    google::protobuf::MessageLite* result) const {
  if (static_cast<int64_t>(data_.size()) != total_size_) {
    return absl::DataLossError(absl::StrCat("result: received ", data_.size(),
                                            " of ", total_size_, " bytes"));
  }
  if (Sha256Hex(data_) != sha256_) {
    return absl::DataLossError("result: sha256 mismatch");
  }
  if (!result->ParseFromString(data_)) {
    return absl::DataLossError("result: chunks do not parse");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::QuantizeResult> ResultAssembler::Finish() const {
  v1::QuantizeResult result;
  absl::Status st = FinishInto(&result);
  if (!st.ok()) return st;
  return result;
}

}  // namespace quantd::client
