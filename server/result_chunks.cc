#include "server/result_chunks.h"

#include <algorithm>

#include "core/util/sha256.h"

namespace quantd::server {

int64_t ResultChunkBytes(int64_t max_send_message_bytes) {
  // Small chunks keep memory per write bounded even when the limit is huge.
  constexpr int64_t kMaxChunk = int64_t{16} << 20;
  return std::clamp<int64_t>(max_send_message_bytes - kEventEnvelopeBytes,
                             int64_t{1} << 10, kMaxChunk);
}

std::vector<v1::ResultChunk> SplitResult(const std::string& serialized,
                                         int64_t chunk_bytes) {
  const std::string digest = Sha256Hex(serialized);
  const int64_t total = static_cast<int64_t>(serialized.size());
  std::vector<v1::ResultChunk> chunks;
  for (int64_t offset = 0; offset < total; offset += chunk_bytes) {
    v1::ResultChunk& chunk = chunks.emplace_back();
    chunk.set_offset(offset);
    chunk.set_total_size(total);
    chunk.set_sha256(digest);
    chunk.set_data(serialized.substr(offset, chunk_bytes));
  }
  return chunks;
}

}  // namespace quantd::server
