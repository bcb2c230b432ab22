// ONNX import + validation + shape inference on untrusted model bytes.
// Limits are small so that a claimed huge tensor is rejected by the size
// checks instead of exhausting the fuzzer's memory: a crash, leak, UB or an
// allocation beyond them is a finding.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  quantd::ImportOptions options;
  options.max_nodes = 4096;
  options.max_tensor_bytes = int64_t{1} << 24;
  options.max_total_initializer_bytes = int64_t{1} << 26;
  absl::StatusOr<quantd::Model> model = quantd::ImportOnnx(
      absl::string_view(reinterpret_cast<const char*>(data), size), options);
  if (!model.ok()) return 0;
  quantd::ShapeInferenceOptions shape_options;
  shape_options.max_constant_elements = 1 << 16;
  shape_options.max_total_constant_elements = 1 << 20;
  (void)quantd::InferShapes(&*model, shape_options);
  return 0;
}
