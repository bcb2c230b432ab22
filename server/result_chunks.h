// Splits a serialized result (QuantizeResult, PruneResult) that exceeds the
// max send message size into ResultChunk events (clients/cpp reassembles and
// verifies them).
#ifndef QUANTD_SERVER_RESULT_CHUNKS_H_
#define QUANTD_SERVER_RESULT_CHUNKS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "quantd/v1/job.pb.h"

namespace quantd::server {

// Room left in every message for the JobEvent envelope (ids, tags).
inline constexpr int64_t kEventEnvelopeBytes = 64 << 10;

// Largest chunk payload for a given max send message size.
int64_t ResultChunkBytes(int64_t max_send_message_bytes);

// Chunks in order, each with offset, total_size and the sha256 of the whole.
std::vector<v1::ResultChunk> SplitResult(const std::string& serialized,
                                         int64_t chunk_bytes);

// `result` as the events that carry it: one `result` event, or ResultChunk
// events when it does not fit one message of `max_send_message_bytes`.
template <typename Event, typename Result>
std::vector<Event> ResultEvents(Result result, int64_t max_send_message_bytes) {
  std::vector<Event> events;
  if (static_cast<int64_t>(result.ByteSizeLong()) + kEventEnvelopeBytes <=
      max_send_message_bytes) {
    *events.emplace_back().mutable_result() = std::move(result);
    return events;
  }
  const std::string serialized = result.SerializeAsString();
  result.Clear();
  for (v1::ResultChunk& chunk :
       SplitResult(serialized, ResultChunkBytes(max_send_message_bytes))) {
    *events.emplace_back().mutable_result_chunk() = std::move(chunk);
  }
  return events;
}

}  // namespace quantd::server

#endif  // QUANTD_SERVER_RESULT_CHUNKS_H_
