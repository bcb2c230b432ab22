// Graph IR -> ONNX.
//
//   ASSIGN_OR_RETURN(std::string bytes, ExportOnnx(model));
//
// Initializers are written as little-endian raw_data; those listed in
// Graph::sub_byte_types are packed to INT4/UINT4 (data_type 22/21, two values
// per byte, first element in the low nibble). value_info, opset imports,
// metadata_props and subgraphs are kept, so import(export(m)) == m.
#ifndef QUANTD_CORE_GRAPH_ONNX_EXPORT_H_
#define QUANTD_CORE_GRAPH_ONNX_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace quantd {

absl::StatusOr<onnx::ModelProto> ExportOnnxProto(const Model& model);
absl::StatusOr<std::string> ExportOnnx(const Model& model);

// One tensor as a TensorProto (raw_data). `as_type` kInt4/kUint4 packs an
// int8/uint8 tensor whose values fit in 4 bits; kUndefined keeps dtype().
absl::StatusOr<onnx::TensorProto> TensorToProto(
    const Tensor& tensor, const std::string& name,
    DType as_type = DType::kUndefined);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_ONNX_EXPORT_H_
