// Deterministic bytes for protos that carry maps (OpQuantizationConfig's
// attr_weights_configs_mapping): protobuf's Map iterates in a per-instance
// order, so files are written from a deterministic (key-sorted)
// serialization, and JSON is produced from those bytes.
#ifndef QUANTD_CLIENTS_BATCH_PROTO_OUTPUT_H_
#define QUANTD_CLIENTS_BATCH_PROTO_OUTPUT_H_

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace quantd {

std::string SerializeDeterministic(const google::protobuf::Message& message);

// Indented JSON with proto field names, map keys sorted.
absl::StatusOr<std::string> ToDeterministicJson(
    const google::protobuf::Message& message);

}  // namespace quantd

#endif  // QUANTD_CLIENTS_BATCH_PROTO_OUTPUT_H_
