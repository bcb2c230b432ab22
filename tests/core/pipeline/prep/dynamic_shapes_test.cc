#include "core/pipeline/prep/dynamic_shapes.h"

#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

ValueInfo Info(const std::string& name, std::vector<int64_t> shape,
               std::vector<std::string> dim_params) {
  ValueInfo v;
  v.name = name;
  v.dtype = DType::kFloat;
  v.has_shape = true;
  v.shape = std::move(shape);
  v.dim_params = std::move(dim_params);
  return v;
}

TEST(ProbeShapesTest, DoublesOnlyTheDynamicDimensions) {
  const std::vector<ValueInfo> declared = {
      Info("x", {-1, 3, -1, 8}, {"batch", "", "", ""}),
      Info("fixed", {2, 2}, {"", ""})};
  const InputShapes probe =
      ProbeShapes(declared, {{"x", {1, 3, 5, 8}}, {"fixed", {2, 2}}});
  EXPECT_THAT(probe.at("x"), ElementsAre(2, 3, 10, 8));
  EXPECT_THAT(probe.at("fixed"), ElementsAre(2, 2));
}

TEST(ProbeShapesTest, EmptyWhenNothingIsDynamic) {
  EXPECT_THAT(ProbeShapes({Info("x", {1, 3}, {"", ""})}, {{"x", {1, 3}}}),
              IsEmpty());
}

// x[batch,4] -> Relu -> y[batch,4], bound to batch 1 for calibration.
Model BoundReluModel(bool static_reshape) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {-1, 4});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  if (static_reshape) {
    // What a batch-1 exporter writes: Reshape to a constant [1, 4].
    b.Int64Initializer("shape", {1, 4}, {2});
    b.AddNode("Reshape", {"r", "shape"}, {"y"}, "reshape");
  } else {
    b.AddNode("Relu", {"r"}, {"y"}, "relu2");
  }
  b.Output("y", DType::kFloat, {-1, 4}, true);
  b.NameDim0("batch");
  auto model = ImportOnnxModel(b.Build());
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

TEST(RestoreDeclaredShapesTest, PutsTheSymbolicBatchBack) {
  Model m = BoundReluModel(/*static_reshape=*/false);
  const std::vector<ValueInfo> inputs = m.graph.inputs;
  const std::vector<ValueInfo> outputs = m.graph.outputs;
  ASSERT_TRUE(InferShapes(&m, {.input_shapes = {{"x", {1, 4}}}}).ok());
  ASSERT_THAT(m.graph.inputs[0].shape, ElementsAre(1, 4));
  ASSERT_FALSE(m.graph.value_info.empty());
  std::vector<std::string> warnings;
  RestoreDeclaredShapes(inputs, outputs, &m, &warnings);
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_THAT(m.graph.inputs[0].shape, ElementsAre(-1, 4));
  EXPECT_EQ(m.graph.inputs[0].dim_params[0], "batch");
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(-1, 4));
  EXPECT_EQ(m.graph.outputs[0].dim_params[0], "batch");
  EXPECT_TRUE(m.graph.value_info.empty());
}

TEST(RestoreDeclaredShapesTest, KeepsBoundShapesAndSaysWhyWhenTheGraphIsFixed) {
  Model m = BoundReluModel(/*static_reshape=*/true);
  const std::vector<ValueInfo> inputs = m.graph.inputs;
  const std::vector<ValueInfo> outputs = m.graph.outputs;
  ASSERT_TRUE(InferShapes(&m, {.input_shapes = {{"x", {1, 4}}}}).ok());
  std::vector<std::string> warnings;
  RestoreDeclaredShapes(inputs, outputs, &m, &warnings);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("input 'x' dim 0 (batch)"));
  EXPECT_THAT(warnings[0], HasSubstr("reshape"));
  EXPECT_THAT(m.graph.inputs[0].shape, ElementsAre(1, 4));
}

TEST(RestoreDeclaredShapesTest, KeepsBoundShapesWhenOnlyTheExportIsFixed) {
  // The float model runs at any batch; the export (as if a transform had
  // written the static Reshape) does not: the bound shapes stay.
  const Model float_model = BoundReluModel(/*static_reshape=*/false);
  Model m = BoundReluModel(/*static_reshape=*/true);
  const std::vector<ValueInfo> inputs = m.graph.inputs;
  const std::vector<ValueInfo> outputs = m.graph.outputs;
  ASSERT_TRUE(InferShapes(&m, {.input_shapes = {{"x", {1, 4}}}}).ok());
  std::vector<std::string> warnings;
  RestoreDeclaredShapes(inputs, outputs, &m, &warnings, &float_model);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("keeps the calibration shapes"));
  EXPECT_THAT(m.graph.inputs[0].shape, ElementsAre(1, 4));
}

TEST(RestoreDeclaredShapesTest,
     DeclaresTheFloatDimsWhenTheFloatModelIsFixedToo) {
  // The float model itself only runs at batch 1 (its Reshape is static):
  // the probe's failure is not the export's, so the declaration goes back.
  const Model float_model = BoundReluModel(/*static_reshape=*/true);
  Model m = float_model;
  const std::vector<ValueInfo> inputs = m.graph.inputs;
  const std::vector<ValueInfo> outputs = m.graph.outputs;
  ASSERT_TRUE(InferShapes(&m, {.input_shapes = {{"x", {1, 4}}}}).ok());
  std::vector<std::string> warnings;
  RestoreDeclaredShapes(inputs, outputs, &m, &warnings, &float_model);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("like the float model"));
  EXPECT_THAT(m.graph.inputs[0].shape, ElementsAre(-1, 4));
  EXPECT_EQ(m.graph.inputs[0].dim_params[0], "batch");
  EXPECT_TRUE(m.graph.value_info.empty());
}

}  // namespace
}  // namespace quantd
