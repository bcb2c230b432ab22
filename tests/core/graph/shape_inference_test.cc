#include "core/graph/shape_inference.h"

#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using graph_test::ImportOrEmpty;

std::vector<int64_t> ShapeOf(const Model& m, const std::string& name) {
  auto it = m.graph.value_info.find(name);
  return it == m.graph.value_info.end() ? std::vector<int64_t>{99}
                                        : it->second.shape;
}

TEST(InferShapes, ConvWithGroupsDilationAndSameUpper) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 7, 9});
  b.Initializer("w", Tensor(DType::kFloat, {6, 2, 3, 3}));
  // group 2: 4 input channels = 2 per group. SAME_UPPER, stride 2:
  // out = ceil(in / 2) = [4, 5].
  b.AddNode("Conv", {"x", "w"}, {"a"})
      .Int("group", 2)
      .Ints("strides", {2, 2})
      .String("auto_pad", "SAME_UPPER");
  // Explicit pads, dilation 2 (extent 5): floor((4 + 1 + 0 - 5)/1) + 1 = 1,
  // floor((5 + 1 + 0 - 5)/1) + 1 = 2.
  b.Initializer("w2", Tensor(DType::kFloat, {3, 6, 3, 3}));
  b.AddNode("Conv", {"a", "w2"}, {"y"})
      .Ints("dilations", {2, 2})
      .Ints("pads", {1, 1, 0, 0});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(ShapeOf(m, "a"), ElementsAre(1, 6, 4, 5));
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(1, 3, 1, 2));
}

TEST(InferShapes, ConvChannelMismatchNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 3, 8, 8});
  b.Initializer("w", Tensor(DType::kFloat, {4, 2, 3, 3}));
  b.AddNode("Conv", {"x", "w"}, {"y"}, "conv_3");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(InferShapes(&m).status().message(),
              HasSubstr("node 'conv_3' (Conv): input has 3 channels but "
                        "weight [4,2,3,3] with group 1 expects 2"));
}

TEST(InferShapes, ConvTransposeOutputPaddingAndOutputShape) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 2, 3, 3});
  b.Initializer("w", Tensor(DType::kFloat, {2, 4, 3, 3}));
  // s(in-1) + output_padding + k - pads = 2*2 + 1 + 3 - 2 = 6
  b.AddNode("ConvTranspose", {"x", "w"}, {"a"})
      .Ints("strides", {2, 2})
      .Ints("pads", {1, 1, 1, 1})
      .Ints("output_padding", {1, 1});
  b.AddNode("ConvTranspose", {"x", "w"}, {"b"})
      .Ints("strides", {3, 2})
      .Ints("output_shape", {10, 8});
  b.Output("a", DType::kFloat);
  b.Output("b", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(1, 4, 6, 6));
  EXPECT_THAT(m.graph.outputs[1].shape, ElementsAre(1, 4, 10, 8));
}

TEST(InferShapes, MaxPoolCeilModeDropsWindowStartingInPadding) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 1, 5, 5});
  // k=2, s=2, pads end 1: ceil((5+1-2)/2)+1 = 3; the 3rd window starts at 4
  // (< 5 + 0), kept. With in=4, pad 1: ceil((4+1-2)/2)+1 = 3, but the 3rd
  // window would start at 4 >= 4: dropped -> 2.
  b.AddNode("MaxPool", {"x"}, {"y"})
      .Ints("kernel_shape", {2, 2})
      .Ints("strides", {2, 2})
      .Ints("pads", {0, 0, 1, 1})
      .Int("ceil_mode", 1);
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(1, 1, 3, 3));
  ShapeInferenceOptions options;
  options.input_shapes["x"] = {1, 1, 5, 4};
  Model m2 = ImportOrEmpty(b.Build());
  m2.graph.inputs[0].shape = {-1, -1, -1, -1};
  ASSERT_TRUE(InferShapes(&m2, options).ok());
  EXPECT_THAT(m2.graph.outputs[0].shape, ElementsAre(1, 1, 3, 2));
}

TEST(InferShapes, BroadcastMismatchNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 3});
  b.Input("z", DType::kFloat, {1, 4});
  b.AddNode("Add", {"x", "z"}, {"y"}, "add_3");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(
      InferShapes(&m).status().message(),
      HasSubstr("node 'add_3' (Add): shapes [1,3] and [1,4] do not broadcast"));
}

TEST(InferShapes, DynamicBatchIsBoundFromSampleShapes) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {-1, 3, 4});
  b.AddNode("Shape", {"x"}, {"s"});
  b.Int64Initializer("i", {0}, {1});
  b.AddNode("Gather", {"s", "i"}, {"n"});
  b.Int64Initializer("rest", {-1}, {1});
  b.AddNode("Concat", {"n", "rest"}, {"shape"}).Int("axis", 0);
  b.AddNode("Reshape", {"x", "shape"}, {"y"});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  // Without a bound batch the shape stays partly unknown...
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(-1, -1));
  // ...and with it the Shape subgraph folds: [5, 3*4].
  ShapeInferenceOptions options;
  options.input_shapes["x"] = {5, 3, 4};
  Model bound = ImportOrEmpty(b.Build());
  absl::StatusOr<ShapeInferenceResult> r = InferShapes(&bound, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(bound.graph.outputs[0].shape, ElementsAre(5, 12));
  ASSERT_EQ(r->constants.count("shape"), 1u);
  EXPECT_THAT(r->constants.at("shape").span<int64_t>(), ElementsAre(5, -1));
}

TEST(InferShapes, ReshapeZeroCopiesAndMinusOneInfers) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3, 4});
  b.Int64Initializer("s", {0, -1, 2}, {3});
  b.AddNode("Reshape", {"x", "s"}, {"y"}, "r");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(InferShapes(&m).ok());
  // 0 copies 2; 24 / (2*2) = 6
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(2, 6, 2));
}

TEST(InferShapes, ReshapeToIncompatibleShapeNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3, 4});
  b.Int64Initializer("s", {5, -1}, {2});
  b.AddNode("Reshape", {"x", "s"}, {"y"}, "r");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(
      InferShapes(&m).status().message(),
      HasSubstr("node 'r' (Reshape): cannot reshape [2,3,4] to [5,-1]"));
}

TEST(InferShapes, ReshapeWhoseElementCountOverflowsIsRejected) {
  // Found by the onnx_import fuzzer (300 s run): two dims below the 2^40 dim
  // limit whose product (2^73) overflowed int64.
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3, 4});
  b.Int64Initializer("s", {int64_t{1} << 37, int64_t{1} << 36}, {2});
  b.AddNode("Reshape", {"x", "s"}, {"y"}, "r");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(InferShapes(&m).status().message(),
              HasSubstr("node 'r' (Reshape): shape [137438953472,68719476736] "
                        "is too large"));
}

TEST(InferShapes, GemmInnerDimMismatch) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3});
  b.Initializer("w", Tensor(DType::kFloat, {4, 5}));
  b.AddNode("Gemm", {"x", "w"}, {"y"}, "fc").Int("transB", 1);
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(InferShapes(&m).status().message(),
              HasSubstr("node 'fc' (Gemm): inner dims differ: A has K=3, B "
                        "has K=5"));
}

TEST(InferShapes, LstmOutputsFollowLayoutAndDirection) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {7, 2, 5});  // seq, batch, input
  b.Initializer("w", Tensor(DType::kFloat, {2, 12, 5}));
  b.Initializer("r", Tensor(DType::kFloat, {2, 12, 3}));
  b.AddNode("LSTM", {"x", "w", "r"}, {"y", "yh", "yc"})
      .Int("hidden_size", 3)
      .String("direction", "bidirectional");
  b.Output("y", DType::kFloat);
  b.Output("yh", DType::kFloat);
  b.Output("yc", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(7, 2, 2, 3));
  EXPECT_THAT(m.graph.outputs[1].shape, ElementsAre(2, 2, 3));
  EXPECT_THAT(m.graph.outputs[2].shape, ElementsAre(2, 2, 3));
}

TEST(InferShapes, UnknownOpIsListedOrStrictlyRejected) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.AddNode("TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
  b.Output("y", DType::kInt64);
  Model m = ImportOrEmpty(b.Build());
  absl::StatusOr<ShapeInferenceResult> r = InferShapes(&m);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->unsupported, ElementsAre("node 'tfidf' (TfIdfVectorizer)"));
  ShapeInferenceOptions strict;
  strict.strict = true;
  EXPECT_EQ(InferShapes(&m, strict).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(InferShapes, DeclaredOutputShapeConflictIsAnError) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3});
  b.AddNode("Transpose", {"x"}, {"y"}, "t");
  b.Output("y", DType::kFloat, {2, 3});  // transpose gives [3, 2]
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(InferShapes(&m).status().message(),
              HasSubstr("graph output 'y': inferred shape [3,2] differs from "
                        "the declared [2,3]"));
}

}  // namespace
}  // namespace quantd

namespace quantd {
namespace {

TEST(InferShapes, LeavesSubgraphsOfModelCopiesAlone) {
  OnnxModelBuilder then_b, else_b;
  then_b.AddNode("Neg", {"x"}, {"t"});
  then_b.Output("t", DType::kFloat);
  else_b.AddNode("Abs", {"x"}, {"e"});
  else_b.Output("e", DType::kFloat);
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2, 3});
  b.Input("cond", DType::kBool, {});
  b.AddNode("If", {"cond"}, {"y"}, "if")
      .GraphAttr("then_branch", then_b.Build().graph())
      .GraphAttr("else_branch", else_b.Build().graph());
  b.Output("y", DType::kFloat);
  absl::StatusOr<Model> original = ImportOnnxModel(b.Build());
  ASSERT_TRUE(original.ok()) << original.status();
  Model copy = *original;
  ASSERT_TRUE(InferShapes(&copy).ok());
  const Graph& inferred_then =
      *copy.graph.nodes[0].FindAttribute("then_branch")->g;
  EXPECT_THAT(inferred_then.value_info.at("t").shape, ElementsAre(2, 3));
  EXPECT_THAT(copy.graph.outputs[0].shape, ElementsAre(2, 3));
  EXPECT_TRUE(original->graph.nodes[0]
                  .FindAttribute("then_branch")
                  ->g->value_info.empty());
}

TEST(InferShapes, RankAboveTheLimitNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1});
  // A shape of 65 ones: one element, rank 65.
  b.Initializer("s",
                Tensor::FromVector<int64_t>(std::vector<int64_t>(65, 1), {65}));
  b.AddNode("Reshape", {"x", "s"}, {"y"}, "reshape_9");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(InferShapes(&m).status().message(),
              HasSubstr("node 'reshape_9' (Reshape): output 'y' would have "
                        "rank 65; tensors of rank above 64"));
}

TEST(InferShapes, RankFromAnUnknownShapeOfHugeLengthNamesTheNode) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1});
  // 3e9 ones: too large to compute, so Reshape only knows the length.
  b.Initializer("s", Tensor::FromVector<int64_t>({3019964416}, {1}));
  b.AddNode("ConstantOfShape", {"s"}, {"ones"});
  b.AddNode("Reshape", {"x", "ones"}, {"y"}, "reshape_7");
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  EXPECT_THAT(InferShapes(&m).status().message(),
              HasSubstr("node 'reshape_7' (Reshape): output would have rank "
                        "3019964416; tensors of rank above 64"));
}

TEST(InferShapes, ValuesPastTheConstantBudgetKeepOnlyTheirTypes) {
  OnnxModelBuilder b;
  b.Initializer("s", Tensor::FromVector<int64_t>({6}, {1}));
  // Each ConstantOfShape makes 6 elements; a budget of 10 tracks the first.
  b.AddNode("ConstantOfShape", {"s"}, {"a"});
  b.AddNode("ConstantOfShape", {"s"}, {"b"});
  b.Output("a", DType::kFloat);
  b.Output("b", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ShapeInferenceOptions options;
  options.max_total_constant_elements = 10;
  absl::StatusOr<ShapeInferenceResult> r = InferShapes(&m, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->constants.count("a"), 1u);
  EXPECT_EQ(r->constants.count("b"), 0u);
  EXPECT_THAT(m.graph.outputs[1].shape, ElementsAre(6));
}

}  // namespace
}  // namespace quantd
