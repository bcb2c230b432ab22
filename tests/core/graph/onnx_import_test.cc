#include "core/graph/onnx_import.h"

#include <random>
#include <string>
#include <vector>

#include "core/graph/onnx_export.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

ConvSpec SmallConv() {
  ConvSpec conv;
  conv.input_shape = {1, 2, 4, 4};
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i);
  conv.weight = Tensor::FromVector<float>(w, {3, 2, 3, 3});
  conv.bias = Tensor::FromVector<float>({0.5f, -0.5f, 1.f}, {3});
  conv.pads = {1, 1, 1, 1};
  return conv;
}

std::string Serialize(const onnx::ModelProto& proto) {
  std::string bytes;
  proto.SerializeToString(&bytes);
  return bytes;
}

TEST(OnnxImport, ImportsConvModelWithWeightsAndAttributes) {
  absl::StatusOr<Model> model =
      ImportOnnx(Serialize(MakeConvModel(SmallConv())));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->DefaultOpset(), 13);
  ASSERT_EQ(model->graph.nodes.size(), 1u);
  const Node& conv = model->graph.nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.GetInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  const Tensor* w = model->graph.FindInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape(), (std::vector<int64_t>{3, 2, 3, 3}));
  EXPECT_FLOAT_EQ(w->data<float>()[17], 0.17f);
  ASSERT_EQ(model->graph.inputs.size(), 1u);
  EXPECT_EQ(model->graph.inputs[0].shape, (std::vector<int64_t>{1, 2, 4, 4}));
}

TEST(OnnxImport, TypedFieldsDecodeLikeRawData) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT8);
  p.add_dims(3);
  p.add_int32_data(-128);
  p.add_int32_data(0);
  p.add_int32_data(127);
  absl::StatusOr<Tensor> t = TensorFromProto(p, 1 << 20);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kInt8);
  EXPECT_EQ(t->data<int8_t>()[0], -128);
  EXPECT_EQ(t->data<int8_t>()[2], 127);

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::INT64);
  d.add_dims(2);
  d.add_int64_data(int64_t{1} << 40);
  d.add_int64_data(-7);
  absl::StatusOr<Tensor> t64 = TensorFromProto(d, 1 << 20);
  ASSERT_TRUE(t64.ok());
  EXPECT_EQ(t64->data<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(t64->data<int64_t>()[1], -7);
}

TEST(OnnxImport, Int4RawDataUnpacksLowNibbleFirst) {
  // bytes 0x21, 0x0F: elements 1, 2, -1 (0xF sign-extended), pad nibble 0.
  onnx::TensorProto p;
  p.set_data_type(22);  // INT4
  p.add_dims(3);
  p.set_raw_data(std::string("\x21\x0F", 2));
  DType sub = DType::kUndefined;
  absl::StatusOr<Tensor> t = TensorFromProto(p, 1 << 20, &sub);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(sub, DType::kInt4);
  ASSERT_EQ(t->dtype(), DType::kInt8);
  EXPECT_EQ(t->data<int8_t>()[0], 1);
  EXPECT_EQ(t->data<int8_t>()[1], 2);
  EXPECT_EQ(t->data<int8_t>()[2], -1);
}

TEST(OnnxImport, ConstantNodesBecomeInitializers) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Constant", {}, {"c"})
      .TensorAttr("value", Tensor::FromVector<float>({1.f, 2.f}, {2}));
  b.AddNode("Constant", {}, {"k"}).Ints("value_ints", {4, 5});
  b.AddNode("Add", {"x", "c"}, {"y"});
  b.Output("y", DType::kFloat);
  b.Output("k", DType::kInt64);
  absl::StatusOr<Model> model = ImportOnnx(b.Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor* c = model->graph.FindInitializer("c");
  ASSERT_NE(c, nullptr);
  EXPECT_FLOAT_EQ(c->data<float>()[1], 2.f);
  // "k" is a graph output, so it stays produced by a node (an Identity).
  ASSERT_EQ(model->graph.nodes.size(), 2u);
  EXPECT_EQ(model->graph.nodes[0].op_type, "Identity");
  EXPECT_EQ(model->graph.nodes[0].outputs[0], "k");
  EXPECT_EQ(model->graph.FindInitializer(model->graph.nodes[0].inputs[0])
                ->data<int64_t>()[1],
            5);
}

TEST(OnnxImport, GeneratesUniqueNamesForUnnamedNodes) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Relu", {"x"}, {"a"});
  b.AddNode("Relu", {"a"}, {"b"}, "Relu_0");  // collides with a generated name
  b.AddNode("Relu", {"b"}, {"c"});
  b.Output("c", DType::kFloat);
  absl::StatusOr<Model> model = ImportOnnx(b.Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::string> names;
  for (const Node& n : model->graph.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"Relu_0_1", "Relu_0", "Relu_2"}));
}

TEST(OnnxImport, BindsDynamicInputDims) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {-1, 3});
  b.AddNode("Relu", {"x"}, {"y"});
  b.Output("y", DType::kFloat);
  ImportOptions options;
  options.input_shapes["x"] = {5, 3};
  absl::StatusOr<Model> model = ImportOnnx(b.Serialize(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->graph.inputs[0].shape, (std::vector<int64_t>{5, 3}));
  options.input_shapes["x"] = {5, 4};
  EXPECT_THAT(ImportOnnx(b.Serialize(), options).status().message(),
              HasSubstr("differs from the declared dim 1"));
}

TEST(OnnxImport, SortsNodesTopologically) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Relu", {"a"}, {"b"}, "second");
  b.AddNode("Neg", {"x"}, {"a"}, "first");
  b.Output("b", DType::kFloat);
  absl::StatusOr<Model> model = ImportOnnx(b.Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->graph.nodes[0].name, "first");
  EXPECT_EQ(model->graph.nodes[1].name, "second");
}

// ---- malformed input --------------------------------------------------------

TEST(OnnxImportMalformed, EveryTruncatedPrefixFailsCleanly) {
  const std::string bytes = Serialize(MakeConvModel(SmallConv()));
  int accepted = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    absl::StatusOr<Model> m = ImportOnnx(absl::string_view(bytes.data(), len));
    if (m.ok()) {
      ++accepted;  // a prefix can be a valid message with fewer fields
    } else {
      EXPECT_FALSE(m.status().message().empty());
    }
  }
  // A prefix that drops the graph's last fields may still parse, but most
  // cut a length-delimited field and must be rejected.
  EXPECT_LT(accepted, static_cast<int>(bytes.size()) / 2);
}

TEST(OnnxImportMalformed, RandomByteFlipsNeverCrash) {
  const std::string bytes = Serialize(MakeConvModel(SmallConv()));
  std::mt19937 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + trial % 4;
    for (int k = 0; k < flips; ++k) {
      mutated[rng() % mutated.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    absl::StatusOr<Model> m = ImportOnnx(mutated);
    if (!m.ok()) {
      EXPECT_FALSE(m.status().message().empty());
    }
  }
}

TEST(OnnxImportMalformed, InitializerBytesDisagreeingWithDims) {
  onnx::ModelProto proto = MakeConvModel(SmallConv());
  proto.mutable_graph()->mutable_initializer(0)->add_dims(2);  // w: 5 dims
  EXPECT_THAT(ImportOnnx(Serialize(proto)).status().message(),
              HasSubstr("initializer 'w': raw_data has 216 bytes but dims "
                        "[3,2,3,3,2] of float need 432"));
}

TEST(OnnxImportMalformed, HugeClaimedShapeIsRejectedWithoutAllocating) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  onnx::TensorProto* t = b.graph()->add_initializer();
  t->set_name("big");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1000000000000);
  t->add_dims(1000000000000);
  b.AddNode("Add", {"x", "big"}, {"y"});
  b.Output("y", DType::kFloat);
  EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
              HasSubstr("initializer 'big': dims [1000000000000,1000000000000] "
                        "overflow int64"));
  t->set_dims(0, 1000000);
  t->set_dims(1, 1000000);  // 4e12 bytes: fits int64, over the limit
  absl::Status s = ImportOnnx(b.Serialize()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("exceed the tensor limit"));
}

TEST(OnnxImportMalformed, UnknownDtypeNamesTheTensor) {
  onnx::ModelProto proto = MakeConvModel(SmallConv());
  proto.mutable_graph()->mutable_initializer(1)->set_data_type(99);
  EXPECT_THAT(ImportOnnx(Serialize(proto)).status().message(),
              HasSubstr("initializer 'b': unknown data_type 99"));
  proto = MakeConvModel(SmallConv());
  proto.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->set_elem_type(77);
  EXPECT_THAT(ImportOnnx(Serialize(proto)).status().message(),
              HasSubstr("graph input 'x': unknown elem_type 77"));
}

TEST(OnnxImportMalformed, ExternalDataIsRejected) {
  onnx::ModelProto proto = MakeConvModel(SmallConv());
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  EXPECT_THAT(ImportOnnx(Serialize(proto)).status().message(),
              HasSubstr("initializer 'w': external data is not supported"));
}

TEST(OnnxImportMalformed, CycleNamesANode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Add", {"x", "c"}, {"a"}, "add");
  b.AddNode("Relu", {"a"}, {"c"}, "relu");
  b.Output("c", DType::kFloat);
  EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
              HasSubstr("node 'add' (Add): is part of a cycle"));
}

TEST(OnnxImportMalformed, DanglingInputNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Add", {"x", "nowhere"}, {"y"}, "add_1");
  b.Output("y", DType::kFloat);
  EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
              HasSubstr("node 'add_1' (Add): input 1 'nowhere' is not "
                        "produced by any node, input or initializer"));
}

TEST(OnnxImportMalformed, DuplicateOutputNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Relu", {"x"}, {"y"}, "r1");
  b.AddNode("Neg", {"x"}, {"y"}, "r2");
  b.Output("y", DType::kFloat);
  EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
              HasSubstr("node 'r2' (Neg): output 'y' is already produced by "
                        "node 'r1' (Relu)"));
}

TEST(OnnxImportMalformed, NodeWithoutOutputNamesTheNode) {
  // Found by the onnx_import fuzzer (300 s run): shape inference read
  // outputs[0] of a Shape node that had none.
  for (const std::vector<std::string>& outputs :
       {std::vector<std::string>{}, std::vector<std::string>{""}}) {
    OnnxModelBuilder b(15);
    b.Input("x", DType::kFloat, {2});
    b.AddNode("Shape", {"x"}, outputs, "shape_1");
    b.AddNode("Relu", {"x"}, {"y"}, "relu_1");
    b.Output("y", DType::kFloat);
    EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
                HasSubstr("node 'shape_1' (Shape): the node has no output"));
  }
}

TEST(OnnxImportMalformed, ModelWithoutOutputsIsRejected) {
  // Imported, the job would report "OK" with SQNR 0.0.
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Relu", {"x"}, {"y"}, "relu_1");
  EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
              HasSubstr("graph.output: the model has no outputs"));
}

// `depth` If nodes, each in the then_branch of the previous one.
std::string NestedIfModel(int depth) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(15);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("g");
  for (int d = 0; d < depth; ++d) {
    onnx::NodeProto* node = graph->add_node();
    node->set_op_type("If");
    node->add_input("c");
    node->add_output("y");
    onnx::AttributeProto* then_branch = node->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    graph = then_branch->mutable_g();
    graph->set_name("then");
  }
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

TEST(OnnxImportMalformed, DeeplyNestedSubgraphsAreNamedNotCorrupt) {
  // Depth 60 is named as nesting, not as "truncated or corrupt".
  const absl::Status status = ImportOnnx(NestedIfModel(60)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("graph: subgraphs (If/Loop/Scan bodies) are nested "
                        "deeper than the 100 message levels"));
  std::string truncated = NestedIfModel(3);
  truncated.resize(truncated.size() - 3);
  EXPECT_THAT(ImportOnnx(truncated).status().message(),
              HasSubstr("truncated or corrupt"));
}

TEST(OnnxImportMalformed, UnsupportedDomainAndOpset) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("FusedGemm", {"x"}, {"y"}, "fg")
      .proto()
      ->set_domain("com.microsoft");
  b.Output("y", DType::kFloat);
  EXPECT_THAT(ImportOnnx(b.Serialize()).status().message(),
              HasSubstr("node 'fg' (FusedGemm): domain 'com.microsoft' is not "
                        "supported"));
  onnx::ModelProto old = MakeUnaryModel("Relu", {2}, /*opset=*/6);
  EXPECT_THAT(ImportOnnx(Serialize(old)).status().message(),
              HasSubstr("default-domain opset 6 is not supported"));
}

TEST(OnnxImportMalformed, TotalInitializerBytesAreLimited) {
  // w = 3*2*3*3 floats = 216 bytes, b = 12 bytes: 228 in total.
  ImportOptions options;
  options.max_total_initializer_bytes = 220;
  absl::Status s =
      ImportOnnx(Serialize(MakeConvModel(SmallConv())), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("exceed the total limit of 220 bytes"));
  options.max_total_initializer_bytes = 228;
  EXPECT_TRUE(ImportOnnx(Serialize(MakeConvModel(SmallConv())), options).ok());
}

TEST(OnnxImportMalformed, NewerIrVersionsAndOpsetsAreRejected) {
  onnx::ModelProto proto = MakeUnaryModel("Relu", {2}, /*opset=*/21);
  proto.set_ir_version(10);
  EXPECT_TRUE(ImportOnnx(Serialize(proto)).ok());
  proto.set_ir_version(11);
  EXPECT_THAT(ImportOnnx(Serialize(proto)).status().message(),
              HasSubstr("ir_version 11 is not supported (accepted: 3..10)"));
  proto = MakeUnaryModel("Relu", {2}, /*opset=*/22);
  proto.set_ir_version(10);
  EXPECT_THAT(ImportOnnx(Serialize(proto)).status().message(),
              HasSubstr("default-domain opset 22 is not supported"));
}

TEST(OnnxImportMalformed, TooManyNodes) {
  ImportOptions options;
  options.max_nodes = 0;
  EXPECT_EQ(ImportOnnx(Serialize(MakeUnaryModel("Relu", {2})), options)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(OnnxImportTensorProto, ParsesSampleFileBytes) {
  onnx::TensorProto p = MakeTensorProto(
      "s", Tensor::FromVector<float>({1.5f, -2.f, 3.f, 4.f}, {2, 2}));
  absl::StatusOr<Tensor> t = ImportTensorProto(p.SerializeAsString());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ(t->data<float>()[1], -2.f);
  EXPECT_FALSE(ImportTensorProto("\xff\xff\xff").ok());
}

}  // namespace
}  // namespace quantd
