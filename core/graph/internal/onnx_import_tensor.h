// TensorProto -> Tensor with the caller's name for the tensor in errors
// (onnx_import_tensor.cc); used by the graph import. Internal to core/graph.
#ifndef QUANTD_CORE_GRAPH_INTERNAL_ONNX_IMPORT_TENSOR_H_
#define QUANTD_CORE_GRAPH_INTERNAL_ONNX_IMPORT_TENSOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace quantd {
namespace onnx_import_internal {

// TensorFromProto (onnx_import.h) with `where` naming the tensor in errors
// (e.g. "initializer 'w'").
absl::StatusOr<Tensor> TensorFromProtoImpl(const onnx::TensorProto& proto,
                                           int64_t max_tensor_bytes,
                                           DType* sub_byte_type,
                                           const std::string& where);

}  // namespace onnx_import_internal
}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_INTERNAL_ONNX_IMPORT_TENSOR_H_
