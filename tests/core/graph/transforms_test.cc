#include "core/graph/transforms.h"

#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::Pointwise;

using graph_test::ImportOrEmpty;

std::vector<float> Values(const Graph& g, const std::string& name) {
  const Tensor* t = g.FindInitializer(name);
  if (t == nullptr) return {};
  return std::vector<float>(t->data<float>(),
                            t->data<float>() + t->num_elements());
}

Tensor F(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<float>(v, {n});
}

// BN parameters with var + eps perfect squares: eps = 1, var = [3, 15]
// -> sqrt(var + eps) = [2, 4]; gamma = [1, 8] -> s = [0.5, 2].
struct Bn {
  Tensor gamma = F({1, 8}), beta = F({0.5f, 0}), mean = F({1, 2}),
         var = F({3, 15});
  float eps = 1;
};

ConvSpec PointwiseConv() {
  ConvSpec conv;
  conv.input_shape = {1, 1, 2, 2};
  conv.weight = Tensor::FromVector<float>({2, 3}, {2, 1, 1, 1});
  conv.bias = F({1, -1});
  return conv;
}

TEST(FoldBatchNorms, ConvWeightsAndBiasFollowMctFormula) {
  Bn bn;
  Model m = ImportOrEmpty(MakeConvBnReluModel(
      PointwiseConv(), bn.gamma, bn.beta, bn.mean, bn.var, bn.eps));
  ASSERT_TRUE(FoldBatchNorms(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  const Node& conv = m.graph.nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.outputs[0], "bn_out");  // downstream name kept
  // W' = W * s = [2*0.5, 3*2] = [1, 6]
  EXPECT_THAT(Values(m.graph, conv.inputs[1]),
              Pointwise(FloatEq(), std::vector<float>{1.f, 6.f}));
  // b' = beta + (b - mean) * s = [0.5 + 0*0.5, 0 + (-1-2)*2] = [0.5, -6]
  EXPECT_THAT(Values(m.graph, conv.inputs[2]),
              Pointwise(FloatEq(), std::vector<float>{0.5f, -6.f}));
  EXPECT_EQ(m.graph.FindInitializer("bn_scale"), nullptr);  // dropped
}

TEST(FoldBatchNorms, ConvWithoutBiasGainsOne) {
  Bn bn;
  ConvSpec conv = PointwiseConv();
  conv.bias = Tensor();
  Model m = ImportOrEmpty(
      MakeConvBnReluModel(conv, bn.gamma, bn.beta, bn.mean, bn.var, bn.eps));
  ASSERT_TRUE(FoldBatchNorms(&m).ok());
  ASSERT_EQ(m.graph.nodes[0].inputs.size(), 3u);
  // b' = beta - mean * s = [0.5 - 0.5, 0 - 4] = [0, -4]
  EXPECT_THAT(Values(m.graph, m.graph.nodes[0].inputs[2]),
              Pointwise(FloatEq(), std::vector<float>{0.f, -4.f}));
}

TEST(FoldBatchNorms, SkipsConvWhoseOutputHasAnotherConsumer) {
  Bn bn;
  onnx::ModelProto proto = MakeConvBnReluModel(
      PointwiseConv(), bn.gamma, bn.beta, bn.mean, bn.var, bn.eps);
  auto* extra = proto.mutable_graph()->add_node();
  extra->set_op_type("Neg");
  extra->add_input("conv_out");
  extra->add_output("neg");
  auto* out = proto.mutable_graph()->add_output();
  out->set_name("neg");
  Model m = ImportOrEmpty(proto);
  ASSERT_TRUE(FoldBatchNorms(&m).ok());
  EXPECT_EQ(m.graph.nodes.size(), 4u);
}

TEST(FoldBatchNorms, SkipsConvOutputThatIsAGraphOutput) {
  Bn bn;
  onnx::ModelProto proto = MakeConvBnReluModel(
      PointwiseConv(), bn.gamma, bn.beta, bn.mean, bn.var, bn.eps);
  proto.mutable_graph()->add_output()->set_name("conv_out");
  Model m = ImportOrEmpty(proto);
  ASSERT_TRUE(FoldBatchNorms(&m).ok());
  EXPECT_EQ(m.graph.nodes.size(), 3u);
}

TEST(FoldBatchNorms, GemmTransBScalesRowsAndFoldsBeta) {
  Bn bn;
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 2});
  // transB=1: W is [N=2, K=2]; output channel n scales row n.
  b.FloatInitializer("w", {1, 2, 3, 4}, {2, 2});
  b.FloatInitializer("c", {1, -1}, {2});
  b.AddNode("Gemm", {"x", "w", "c"}, {"g"}, "gemm")
      .Int("transB", 1)
      .Float("beta", 2);
  b.Initializer("s", bn.gamma).Initializer("bb", bn.beta);
  b.Initializer("m", bn.mean).Initializer("v", bn.var);
  b.AddNode("BatchNormalization", {"g", "s", "bb", "m", "v"}, {"y"}, "bn")
      .Float("epsilon", bn.eps);
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(FoldBatchNorms(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const Node& gemm = m.graph.nodes[0];
  // rows * s: [1*0.5, 2*0.5, 3*2, 4*2]
  EXPECT_THAT(Values(m.graph, gemm.inputs[1]),
              Pointwise(FloatEq(), std::vector<float>{0.5f, 1.f, 6.f, 8.f}));
  // C' = beta_bn + (beta_attr*c - mean) * s
  //    = [0.5 + (2-1)*0.5, 0 + (-2-2)*2] = [1, -8], and beta becomes 1.
  EXPECT_THAT(Values(m.graph, gemm.inputs[2]),
              Pointwise(FloatEq(), std::vector<float>{1.f, -8.f}));
  EXPECT_FLOAT_EQ(gemm.GetFloat("beta", 0), 1.f);
  EXPECT_EQ(gemm.outputs[0], "y");
}

TEST(FoldBatchNorms, ConvTransposeScalesAxisOne) {
  Bn bn;
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  // W = [C_in=1, M=2, 1, 1]: output channel m is W[:, m].
  b.Initializer("w", Tensor::FromVector<float>({2, 3}, {1, 2, 1, 1}));
  b.AddNode("ConvTranspose", {"x", "w"}, {"t"}, "deconv");
  b.Initializer("s", bn.gamma).Initializer("bb", bn.beta);
  b.Initializer("m", bn.mean).Initializer("v", bn.var);
  b.AddNode("BatchNormalization", {"t", "s", "bb", "m", "v"}, {"y"}, "bn")
      .Float("epsilon", bn.eps);
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(FoldBatchNorms(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  // W' = [2*0.5, 3*2]; b' = beta - mean*s = [0.5-0.5, 0-4]
  EXPECT_THAT(Values(m.graph, m.graph.nodes[0].inputs[1]),
              Pointwise(FloatEq(), std::vector<float>{1.f, 6.f}));
  EXPECT_THAT(Values(m.graph, m.graph.nodes[0].inputs[2]),
              Pointwise(FloatEq(), std::vector<float>{0.f, -4.f}));
}

TEST(FoldBatchNormsForward, FoldsIntoFollowingPointwiseConv) {
  Bn bn;
  bn.beta = F({1, 0});
  bn.mean = F({0, 1});
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 2, 2, 2});
  b.Initializer("s", bn.gamma).Initializer("bb", bn.beta);
  b.Initializer("m", bn.mean).Initializer("v", bn.var);
  b.AddNode("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"n"}, "bn")
      .Float("epsilon", bn.eps);
  b.Initializer("w", Tensor::FromVector<float>({1, 2}, {1, 2, 1, 1}));
  b.FloatInitializer("b", {0.5f}, {1});
  b.AddNode("Conv", {"n", "w", "b"}, {"y"}, "conv");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(FoldBatchNormsForward(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const Node& conv = m.graph.nodes[0];
  EXPECT_EQ(conv.inputs[0], "x");
  // s = [0.5, 2]; shift = beta - mean*s = [1, -2]
  // W' = W*s = [0.5, 4]; b' = 0.5 + 1*1 + 2*(-2) = -2.5
  EXPECT_THAT(Values(m.graph, conv.inputs[1]),
              Pointwise(FloatEq(), std::vector<float>{0.5f, 4.f}));
  EXPECT_THAT(Values(m.graph, conv.inputs[2]),
              Pointwise(FloatEq(), std::vector<float>{-2.5f}));
}

TEST(FoldBatchNormsForward, SkipsPaddedConv) {
  Bn bn;
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 2, 2, 2});
  b.Initializer("s", bn.gamma).Initializer("bb", bn.beta);
  b.Initializer("m", bn.mean).Initializer("v", bn.var);
  b.AddNode("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"n"}, "bn");
  b.Initializer("w", Tensor::FromVector<float>({1, 2}, {1, 2, 1, 1}));
  // Padding would see the BN offset in the border where x is zero-padded.
  b.AddNode("Conv", {"n", "w"}, {"y"}, "conv").Ints("pads", {1, 1, 1, 1});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(FoldBatchNormsForward(&m).ok());
  EXPECT_EQ(m.graph.nodes.size(), 2u);
}

TEST(FoldConstants, ResolvesShapeSubgraphIntoReshapeInitializer) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3, 4});
  b.AddNode("Shape", {"x"}, {"s"});
  b.Int64Initializer("zero", {0}, {});
  b.AddNode("Gather", {"s", "zero"}, {"n"});
  b.Int64Initializer("axes", {0}, {1});
  b.AddNode("Unsqueeze", {"n", "axes"}, {"n1"});
  b.Int64Initializer("minus_one", {-1}, {1});
  b.AddNode("Concat", {"n1", "minus_one"}, {"shape"}).Int("axis", 0);
  b.AddNode("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(FoldConstants(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].name, "reshape");
  // Shape(x)[0] = 2, concat with -1 -> [2, -1]
  const Tensor* shape = m.graph.FindInitializer("shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_THAT(shape->span<int64_t>(), ElementsAre(2, -1));
  EXPECT_EQ(m.graph.initializers.size(), 1u);  // the rest were unused
  // The folded graph still infers y = [2, 12].
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(2, 12));
}

// x[N,4,3] bound to N = 2 for calibration, with a probe at N = 4: Shape(x)[0]
// differs between the two and stays computed; Shape(x)[1] * Shape(x)[2]
// (the same 12 in both) folds.
TEST(FoldConstants, KeepsWhatDependsOnADynamicDimension) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {-1, 4, 3});
  b.AddNode("Shape", {"x"}, {"s"});
  b.Int64Initializer("zero", {0}, {});
  b.AddNode("Gather", {"s", "zero"}, {"n"}, "batch");
  b.Int64Initializer("axes", {0}, {1});
  b.AddNode("Unsqueeze", {"n", "axes"}, {"n1"});
  b.Int64Initializer("starts", {1}, {1});
  b.Int64Initializer("ends", {3}, {1});
  b.AddNode("Slice", {"s", "starts", "ends"}, {"hw"}, "tail");
  b.AddNode("ReduceProd", {"hw"}, {"k"}, "prod").Int("keepdims", 1);
  b.AddNode("Concat", {"n1", "k"}, {"shape"}, "concat").Int("axis", 0);
  b.AddNode("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  Model probe = m;
  auto probed = InferShapes(&probe, {.input_shapes = {{"x", {4, 4, 3}}}});
  ASSERT_TRUE(probed.ok()) << probed.status();
  ASSERT_TRUE(InferShapes(&m, {.input_shapes = {{"x", {2, 4, 3}}}}).ok());
  ConstantFoldingOptions options;
  options.probe_constants = &probed->constants;
  const absl::Status folded = FoldConstants(&m, options);
  ASSERT_TRUE(folded.ok()) << folded;
  // The batch path (Shape, Gather, Unsqueeze, Concat) stays; the product of
  // the static dims became an initializer.
  std::vector<std::string> ops;
  for (const Node& n : m.graph.nodes) ops.push_back(n.op_type);
  EXPECT_THAT(ops,
              ElementsAre("Shape", "Gather", "Unsqueeze", "Concat", "Reshape"));
  const Tensor* k = m.graph.FindInitializer("k");
  ASSERT_NE(k, nullptr);
  EXPECT_THAT(k->span<int64_t>(), ElementsAre(12));
  // Without the probe the calibration batch is baked in.
  Model baked = ImportOrEmpty(b.Build());
  ASSERT_TRUE(InferShapes(&baked, {.input_shapes = {{"x", {2, 4, 3}}}}).ok());
  ASSERT_TRUE(FoldConstants(&baked).ok());
  EXPECT_THAT(baked.graph.FindInitializer("shape")->span<int64_t>(),
              ElementsAre(2, 12));
}

TEST(FoldConstants, FoldsArithmeticOnInitializersButKeepsGraphOutputs) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.FloatInitializer("a", {1, 2}, {2});
  b.FloatInitializer("c", {10, 20}, {2});
  b.AddNode("Mul", {"a", "c"}, {"ac"});
  b.AddNode("Add", {"x", "ac"}, {"y"});
  b.AddNode("Neg", {"a"}, {"z"});  // a graph output: kept as a node
  b.Output("y", DType::kFloat);
  b.Output("z", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(FoldConstants(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_THAT(Values(m.graph, "ac"),
              Pointwise(FloatEq(), std::vector<float>{10.f, 40.f}));
}

TEST(RemoveIdentities, RewiresConsumersAndKeepsOutputNames) {
  OnnxModelBuilder b(12);
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Identity", {"x"}, {"a"});
  b.AddNode("Relu", {"a"}, {"r"}, "relu");
  b.AddNode("Dropout", {"r"}, {"d"}).Float("ratio", 0.5f);
  b.AddNode("Identity", {"d"}, {"y"});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(RemoveIdentities(&m).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].name, "relu");
  EXPECT_THAT(m.graph.nodes[0].inputs, ElementsAre("x"));
  EXPECT_THAT(m.graph.nodes[0].outputs, ElementsAre("y"));
}

TEST(RemoveIdentities, KeepsIdentityBetweenGraphInputAndOutput) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Identity", {"x"}, {"y"});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(RemoveIdentities(&m).ok());
  EXPECT_EQ(m.graph.nodes.size(), 1u);
}

TEST(RemoveIdentities, KeepsDropoutWhoseMaskIsUsed) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("Dropout", {"x"}, {"y", "mask"});
  b.Output("y", DType::kFloat);
  b.Output("mask", DType::kBool);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(RemoveIdentities(&m).ok());
  EXPECT_EQ(m.graph.nodes.size(), 1u);
}

}  // namespace
}  // namespace quantd
