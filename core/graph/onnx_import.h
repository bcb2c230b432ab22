// ONNX -> graph IR.
//
//   ImportOptions options;
//   options.input_shapes["input"] = {8, 3, 224, 224};
//   ASSIGN_OR_RETURN(Model model, ImportOnnx(bytes, options));
//
// The bytes are untrusted: sizes are checked against the limits before any
// tensor is allocated, and every error names the node, initializer or field at
// fault. The returned model is validated (validation.h): node names are
// unique, nodes are in topological order, `Constant` nodes have become
// initializers. Accepted: IR versions 3..10 and default-domain opsets 7..21;
// external data is rejected (quantd receives models as bytes).
#ifndef QUANTD_CORE_GRAPH_ONNX_IMPORT_H_
#define QUANTD_CORE_GRAPH_ONNX_IMPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace quantd {

struct ImportOptions {
  int64_t max_nodes = 1'000'000;  // over all (sub)graphs
  int64_t max_tensor_bytes = int64_t{1} << 31;
  int64_t max_total_initializer_bytes = int64_t{1} << 32;
  // Model sizes up to protobuf's own 2 GiB limit.
  int64_t max_model_bytes = (int64_t{1} << 31) - 1;
  int64_t min_opset = 7;
  int64_t max_opset = 21;
  int64_t max_ir_version = 10;
  // Concrete shapes for graph inputs (by name). Dynamic dims (-1) take the
  // given value; a static dim that disagrees is an error.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Parses serialized ModelProto bytes.
absl::StatusOr<Model> ImportOnnx(absl::string_view bytes,
                                 const ImportOptions& options = {});
// Same, from an already parsed proto (tests and builders).
absl::StatusOr<Model> ImportOnnxModel(const onnx::ModelProto& proto,
                                      const ImportOptions& options = {});
// Reads and imports a file (checks its size before reading it).
absl::StatusOr<Model> ImportOnnxFile(const std::string& path,
                                     const ImportOptions& options = {});

// Serialized TensorProto (a `.pb` sample file) -> Tensor. 4-bit tensors are
// unpacked to one int8/uint8 per element.
absl::StatusOr<Tensor> ImportTensorProto(absl::string_view bytes,
                                         int64_t max_tensor_bytes = int64_t{1}
                                                                    << 31);
// A parsed TensorProto -> Tensor; `*sub_byte_type` (optional) receives
// kInt4/kUint4 when the source was packed 4-bit, else kUndefined.
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                       int64_t max_tensor_bytes,
                                       DType* sub_byte_type = nullptr);

// Binds concrete input shapes on an imported model (same rules as
// ImportOptions::input_shapes); clears stale inferred value_info.
absl::Status BindInputShapes(
    const std::map<std::string, std::vector<int64_t>>& input_shapes,
    Graph* graph);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_ONNX_IMPORT_H_
