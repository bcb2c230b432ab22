// Builds small ONNX models in code for tests.
//
//   OnnxModelBuilder b(/*opset=*/13);
//   b.Input("x", DType::kFloat, {1, 3, 8, 8});
//   b.Initializer("w", Tensor::FromVector<float>(w, {4, 3, 3, 3}));
//   b.AddNode("Conv", {"x", "w"}, {"y"}).Ints("pads", {1, 1, 1, 1});
//   b.AddNode("Relu", {"y"}, {"z"});
//   b.Output("z", DType::kFloat);
//   std::string bytes = b.Serialize();
//
// Also a few ready-made models (ConvBnRelu, Gemm, ...) with given weights.
#ifndef QUANTD_TESTS_DATA_ONNX_MODEL_BUILDER_H_
#define QUANTD_TESTS_DATA_ONNX_MODEL_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace quantd {

// Fluent attribute setter for one node.
class NodeRef {
 public:
  explicit NodeRef(onnx::NodeProto* proto) : proto_(proto) {}
  NodeRef& Int(const std::string& name, int64_t value);
  NodeRef& Float(const std::string& name, float value);
  NodeRef& String(const std::string& name, const std::string& value);
  NodeRef& Ints(const std::string& name, const std::vector<int64_t>& values);
  NodeRef& Floats(const std::string& name, const std::vector<float>& values);
  NodeRef& TensorAttr(const std::string& name, const Tensor& value);
  NodeRef& GraphAttr(const std::string& name, const onnx::GraphProto& graph);
  onnx::NodeProto* proto() { return proto_; }

 private:
  onnx::NodeProto* proto_;
};

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 13, int64_t ir_version = 8);

  // shape: -1 for a dynamic dim (named "d<i>"); `rank_known=false` omits it.
  OnnxModelBuilder& Input(const std::string& name, DType dtype,
                          const std::vector<int64_t>& shape);
  OnnxModelBuilder& Output(const std::string& name, DType dtype,
                           const std::vector<int64_t>& shape = {},
                           bool has_shape = false);
  OnnxModelBuilder& Initializer(const std::string& name, const Tensor& value);
  OnnxModelBuilder& FloatInitializer(const std::string& name,
                                     const std::vector<float>& values,
                                     const std::vector<int64_t>& shape);
  OnnxModelBuilder& Int64Initializer(const std::string& name,
                                     const std::vector<int64_t>& values,
                                     const std::vector<int64_t>& shape);
  // Names dim 0 of every graph input and output that has one: a symbolic
  // batch ("batch") instead of the default "d0".
  OnnxModelBuilder& NameDim0(const std::string& name);
  NodeRef AddNode(const std::string& op_type,
                  const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs,
                  const std::string& name = "");

  onnx::ModelProto& proto() { return model_; }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  const onnx::ModelProto& Build() const { return model_; }
  std::string Serialize() const;

 private:
  onnx::ModelProto model_;
};

// TensorProto with raw_data (little-endian) of the given tensor.
onnx::TensorProto MakeTensorProto(const std::string& name, const Tensor& t);

// x[N,C,H,W] -> Conv(w[M,C,k,k], b[M], pads=p, strides=s) -> y. Inputs "x",
// weights "w"/"b", output "y" (or "conv_out" feeding more nodes).
struct ConvSpec {
  std::vector<int64_t> input_shape;  // N,C,H,W
  Tensor weight;                     // M, C/group, kh, kw
  Tensor bias;                       // M or undefined
  std::vector<int64_t> pads = {0, 0, 0, 0};
  std::vector<int64_t> strides = {1, 1};
  int64_t group = 1;
};
// Conv -> y.
onnx::ModelProto MakeConvModel(const ConvSpec& conv, int64_t opset = 13);
// Conv -> BatchNormalization(scale, bias, mean, var, eps) -> Relu -> y.
onnx::ModelProto MakeConvBnReluModel(const ConvSpec& conv, const Tensor& scale,
                                     const Tensor& bn_bias, const Tensor& mean,
                                     const Tensor& var, float epsilon,
                                     int64_t opset = 13);
// x[N,K] -> Gemm(w[N_out,K] (transB=1), b[N_out]) -> y.
onnx::ModelProto MakeGemmModel(int64_t batch, const Tensor& weight,
                               const Tensor& bias, int64_t opset = 13);
// x -> op -> y, element-wise unary op on a float input of `shape`.
onnx::ModelProto MakeUnaryModel(const std::string& op_type,
                                const std::vector<int64_t>& shape,
                                int64_t opset = 13);

}  // namespace quantd

#endif  // QUANTD_TESTS_DATA_ONNX_MODEL_BUILDER_H_
