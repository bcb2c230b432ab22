#include "tests/data/onnx/model_builder.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_export.h"

namespace quantd {

NodeRef& NodeRef::Int(const std::string& name, int64_t value) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
  return *this;
}

NodeRef& NodeRef::Float(const std::string& name, float value) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
  return *this;
}

NodeRef& NodeRef::String(const std::string& name, const std::string& value) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
  return *this;
}

NodeRef& NodeRef::Ints(const std::string& name,
                       const std::vector<int64_t>& values) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  return *this;
}

NodeRef& NodeRef::Floats(const std::string& name,
                         const std::vector<float>& values) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
  return *this;
}

NodeRef& NodeRef::TensorAttr(const std::string& name, const Tensor& value) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = MakeTensorProto("", value);
  return *this;
}

NodeRef& NodeRef::GraphAttr(const std::string& name,
                            const onnx::GraphProto& graph) {
  auto* a = proto_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = graph;
  return *this;
}

onnx::TensorProto MakeTensorProto(const std::string& name, const Tensor& t) {
  auto proto = TensorToProto(t, name);
  if (!proto.ok()) std::abort();  // test helper: a bug in the test itself
  return *std::move(proto);
}

OnnxModelBuilder::OnnxModelBuilder(int64_t opset, int64_t ir_version) {
  model_.set_ir_version(ir_version);
  model_.set_producer_name("quantd-test");
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

namespace {
void FillValueInfo(const std::string& name, DType dtype,
                   const std::vector<int64_t>& shape, bool has_shape,
                   onnx::ValueInfoProto* vi) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(dtype));
  if (!has_shape) return;
  auto* s = tt->mutable_shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    auto* d = s->add_dim();
    if (shape[i] >= 0) {
      d->set_dim_value(shape[i]);
    } else {
      d->set_dim_param(absl::StrCat("d", i));
    }
  }
}
}  // namespace

OnnxModelBuilder& OnnxModelBuilder::Input(const std::string& name, DType dtype,
                                          const std::vector<int64_t>& shape) {
  FillValueInfo(name, dtype, shape, true, graph()->add_input());
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::Output(const std::string& name, DType dtype,
                                           const std::vector<int64_t>& shape,
                                           bool has_shape) {
  FillValueInfo(name, dtype, shape, has_shape || !shape.empty(),
                graph()->add_output());
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::NameDim0(const std::string& name) {
  for (auto* infos : {graph()->mutable_input(), graph()->mutable_output()}) {
    for (onnx::ValueInfoProto& v : *infos) {
      auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() > 0) shape->mutable_dim(0)->set_dim_param(name);
    }
  }
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::Initializer(const std::string& name,
                                                const Tensor& value) {
  *graph()->add_initializer() = MakeTensorProto(name, value);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::FloatInitializer(
    const std::string& name, const std::vector<float>& values,
    const std::vector<int64_t>& shape) {
  return Initializer(name, Tensor::FromVector<float>(values, shape));
}

OnnxModelBuilder& OnnxModelBuilder::Int64Initializer(
    const std::string& name, const std::vector<int64_t>& values,
    const std::vector<int64_t>& shape) {
  return Initializer(name, Tensor::FromVector<int64_t>(values, shape));
}

NodeRef OnnxModelBuilder::AddNode(const std::string& op_type,
                                  const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs,
                                  const std::string& name) {
  onnx::NodeProto* n = graph()->add_node();
  n->set_op_type(op_type);
  if (!name.empty()) n->set_name(name);
  for (const auto& in : inputs) n->add_input(in);
  for (const auto& out : outputs) n->add_output(out);
  return NodeRef(n);
}

std::string OnnxModelBuilder::Serialize() const {
  std::string bytes;
  model_.SerializeToString(&bytes);
  return bytes;
}

namespace {
void AddConv(const ConvSpec& conv, const std::string& out,
             OnnxModelBuilder* b) {
  b->Input("x", DType::kFloat, conv.input_shape);
  b->Initializer("w", conv.weight);
  std::vector<std::string> inputs = {"x", "w"};
  if (conv.bias.defined()) {
    b->Initializer("b", conv.bias);
    inputs.push_back("b");
  }
  b->AddNode("Conv", inputs, {out}, "conv")
      .Ints("kernel_shape", {conv.weight.dim(2), conv.weight.dim(3)})
      .Ints("pads", conv.pads)
      .Ints("strides", conv.strides)
      .Int("group", conv.group);
}
}  // namespace

onnx::ModelProto MakeConvModel(const ConvSpec& conv, int64_t opset) {
  OnnxModelBuilder b(opset);
  AddConv(conv, "y", &b);
  b.Output("y", DType::kFloat);
  return b.Build();
}

onnx::ModelProto MakeConvBnReluModel(const ConvSpec& conv, const Tensor& scale,
                                     const Tensor& bn_bias, const Tensor& mean,
                                     const Tensor& var, float epsilon,
                                     int64_t opset) {
  OnnxModelBuilder b(opset);
  AddConv(conv, "conv_out", &b);
  b.Initializer("bn_scale", scale)
      .Initializer("bn_bias", bn_bias)
      .Initializer("bn_mean", mean)
      .Initializer("bn_var", var);
  b.AddNode("BatchNormalization",
            {"conv_out", "bn_scale", "bn_bias", "bn_mean", "bn_var"},
            {"bn_out"}, "bn")
      .Float("epsilon", epsilon);
  b.AddNode("Relu", {"bn_out"}, {"y"}, "relu");
  b.Output("y", DType::kFloat);
  return b.Build();
}

onnx::ModelProto MakeGemmModel(int64_t batch, const Tensor& weight,
                               const Tensor& bias, int64_t opset) {
  OnnxModelBuilder b(opset);
  b.Input("x", DType::kFloat, {batch, weight.dim(1)});
  b.Initializer("w", weight);
  std::vector<std::string> inputs = {"x", "w"};
  if (bias.defined()) {
    b.Initializer("b", bias);
    inputs.push_back("b");
  }
  b.AddNode("Gemm", inputs, {"y"}, "gemm").Int("transB", 1);
  b.Output("y", DType::kFloat);
  return b.Build();
}

onnx::ModelProto MakeUnaryModel(const std::string& op_type,
                                const std::vector<int64_t>& shape,
                                int64_t opset) {
  OnnxModelBuilder b(opset);
  b.Input("x", DType::kFloat, shape);
  b.AddNode(op_type, {"x"}, {"y"}, absl::StrCat(op_type, "_0"));
  b.Output("y", DType::kFloat);
  return b.Build();
}

}  // namespace quantd
