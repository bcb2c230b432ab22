// Chunked upload assembly as UploadModel drives it: a header (kind, claimed
// total size, claimed sha256) then chunks with offsets, all chosen by the
// input. Properties: an unknown kind is refused; a claimed size beyond the
// cap never allocates; Finish
// succeeds only for exactly total_size bytes whose sha256 is the claimed one;
// a well-formed upload (in-order offsets, true size and digest) always
// succeeds and returns the bytes sent.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/util/sha256.h"
#include "server/upload_assembler.h"

namespace {

// Takes values off the front of the input (libFuzzer's FuzzedDataProvider
// is clang-only; the replay driver also builds with gcc). Reads past the end
// give zeros.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return Byte() & 1; }
  int64_t Int64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | Byte();
    return static_cast<int64_t>(v);
  }
  int Small(int lo, int hi) { return lo + Byte() % (hi - lo + 1); }
  std::string Bytes(size_t n) {
    n = std::min(n, size_ - pos_);
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }
  // A length (two bytes, below `max`), then that many bytes.
  std::string Chunk(size_t max) {
    const size_t n = ((size_t{Byte()} << 8) | Byte()) % (max + 1);
    return Bytes(n);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int64_t kMaxBytes = 1 << 16;
  Input in(data, size);
  const int kind = in.Small(-1, 3);
  const bool honest_size = in.Bool();
  const bool honest_sha = in.Bool();
  const bool honest_offsets = in.Bool();
  const int64_t claimed_size = in.Int64();
  const std::string claimed_sha = in.Bytes(64);
  const int chunks = in.Small(0, 16);
  std::vector<std::string> pieces;
  std::vector<int64_t> offsets;
  std::string sent;
  for (int i = 0; i < chunks; ++i) {
    const int64_t forged = in.Int64();
    offsets.push_back(honest_offsets ? static_cast<int64_t>(sent.size())
                                     : forged);
    pieces.push_back(in.Chunk(4096));
    sent += pieces.back();
  }
  const int64_t total =
      honest_size ? static_cast<int64_t>(sent.size()) : claimed_size;
  const std::string sha = honest_sha ? quantd::Sha256Hex(sent) : claimed_sha;

  quantd::server::UploadAssembler assembler(kMaxBytes);
  // UPLOAD_KIND_MODEL (1) and UPLOAD_KIND_SAMPLES (2) are the only kinds.
  const bool known_kind = kind == 1 || kind == 2;
  bool well_formed = known_kind && honest_size && honest_sha &&
                     honest_offsets && !sent.empty() &&
                     static_cast<int64_t>(sent.size()) <= kMaxBytes;
  if (!assembler.Begin(kind, total, sha).ok()) {
    if (well_formed) abort();
    return 0;
  }
  if (!known_kind) abort();  // an unknown kind is never stored
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!assembler.Append(offsets[i], pieces[i]).ok()) {
      if (well_formed) abort();
      return 0;
    }
  }
  auto content = assembler.Finish();
  if (well_formed && (!content.ok() || **content != sent)) abort();
  if (content.ok() && (static_cast<int64_t>((*content)->size()) != total ||
                       quantd::Sha256Hex(**content) != sha)) {
    abort();
  }
  return 0;
}
