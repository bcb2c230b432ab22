// .npy parsing. Property: whatever parses re-serializes to bytes that parse
// to the same tensor (the writer is numpy-compatible, tools/ort tests it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "core/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<quantd::Tensor> tensor =
      quantd::ParseNpy(bytes, "fuzz", /*max_tensor_bytes=*/int64_t{1} << 24);
  if (!tensor.ok()) return 0;
  absl::StatusOr<std::string> again = quantd::SerializeNpy(*tensor);
  if (!again.ok()) return 0;  // bfloat16: numpy has no code for it
  absl::StatusOr<quantd::Tensor> round =
      quantd::ParseNpy(*again, "fuzz-roundtrip", int64_t{1} << 24);
  if (!round.ok() || round->dtype() != tensor->dtype() ||
      round->shape() != tensor->shape() ||
      round->byte_size() != tensor->byte_size() ||
      (tensor->byte_size() > 0 &&
       std::memcmp(round->raw(), tensor->raw(), tensor->byte_size()) != 0)) {
    abort();
  }
  return 0;
}
