// Reassembles a result sent as ResultChunk events (when it exceeds the
// server's max send size: Quantize's QuantizeResult, Prune's PruneResult)
// and verifies size and sha256.
#ifndef QUANTD_CLIENTS_CPP_RESULT_ASSEMBLER_H_
#define QUANTD_CLIENTS_CPP_RESULT_ASSEMBLER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "quantd/v1/job.pb.h"

namespace quantd::client {

class ResultAssembler {
 public:
  // Caps what a (hostile or broken) server can make us allocate.
  explicit ResultAssembler(int64_t max_bytes = int64_t{2} << 30)
      : max_bytes_(max_bytes) {}

  absl::Status Add(const v1::ResultChunk& chunk);
  bool started() const { return started_; }
  absl::StatusOr<v1::QuantizeResult> Finish() const;
  // Any result message: DATA_LOSS when the bytes are incomplete, differ
  // from the sha256 or do not parse as `result`.
  absl::Status FinishInto(google::protobuf::MessageLite* result) const;

 private:
  const int64_t max_bytes_;
  bool started_ = false;
  int64_t total_size_ = 0;
  std::string sha256_;
  std::string data_;
};

}  // namespace quantd::client

#endif  // QUANTD_CLIENTS_CPP_RESULT_ASSEMBLER_H_
