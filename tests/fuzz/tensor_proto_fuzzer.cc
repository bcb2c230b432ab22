// A serialized onnx.TensorProto (a `.pb` sample file) -> Tensor.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/graph/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)quantd::ImportTensorProto(
      absl::string_view(reinterpret_cast<const char*>(data), size),
      /*max_tensor_bytes=*/int64_t{1} << 24);
  return 0;
}
