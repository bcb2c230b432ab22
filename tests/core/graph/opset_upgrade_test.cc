#include "core/graph/opset_upgrade.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/graph/constant_eval.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using graph_test::ImportOrEmpty;

// Runs a graph of constant-evaluable ops (the reference evaluator) on the
// given feeds and returns the graph outputs.
std::vector<Tensor> Evaluate(const Model& m,
                             std::map<std::string, Tensor> values) {
  for (const auto& [name, t] : m.graph.initializers) values[name] = t;
  for (const Node& node : m.graph.nodes) {
    std::vector<const Tensor*> in;
    for (const std::string& name : node.inputs) {
      in.push_back(name.empty() ? nullptr : &values.at(name));
    }
    absl::StatusOr<std::vector<Tensor>> out =
        EvaluateNode(node, in, m.DefaultOpset());
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    for (size_t i = 0; i < out->size(); ++i)
      values[node.outputs[i]] = (*out)[i];
  }
  std::vector<Tensor> result;
  for (const ValueInfo& o : m.graph.outputs)
    result.push_back(values.at(o.name));
  return result;
}

std::vector<int64_t> Ints(const Tensor& t) { return *ToInt64Vector(t); }

TEST(UpgradeOpset, Opset9AttributesBecomeInputsWithSameResults) {
  OnnxModelBuilder b(9, 4);
  b.Input("x", DType::kInt64, {2, 3, 4});
  b.AddNode("Slice", {"x"}, {"s"})
      .Ints("starts", {1, -3})
      .Ints("ends", {3, 100})
      .Ints("axes", {1, 2});
  b.AddNode("Unsqueeze", {"s"}, {"u"}).Ints("axes", {0, 4});
  b.AddNode("Squeeze", {"u"}, {"q"}).Ints("axes", {0});
  b.AddNode("ReduceSum", {"q"}, {"r"}).Ints("axes", {1}).Int("keepdims", 0);
  b.Output("r", DType::kInt64);
  Model before = ImportOrEmpty(b.Build());
  std::vector<int64_t> x(24);
  for (int i = 0; i < 24; ++i) x[i] = i;
  std::map<std::string, Tensor> feeds = {
      {"x", Tensor::FromVector<int64_t>(x, {2, 3, 4})}};
  std::vector<Tensor> want = Evaluate(before, feeds);

  Model after = before;
  ASSERT_TRUE(UpgradeOpset(&after, 13).ok());
  EXPECT_EQ(after.DefaultOpset(), 13);
  EXPECT_EQ(after.ir_version, 7);
  for (const Node& n : after.graph.nodes) {
    EXPECT_TRUE(n.attributes.count("axes") == 0 &&
                n.attributes.count("starts") == 0)
        << n.Label();
  }
  std::vector<Tensor> got = Evaluate(after, feeds);
  ASSERT_EQ(got.size(), 1u);
  // x[n,c,w] = 12n + 4c + w; slice keeps c in {1,2}, w in {1,2,3}; the sum
  // over c is (12n+4+w) + (12n+8+w) = 24n + 12 + 2w:
  // n=0: 14, 16, 18; n=1: 38, 40, 42.
  EXPECT_THAT(Ints(got[0]), ElementsAre(14, 16, 18, 38, 40, 42));
  EXPECT_EQ(Ints(got[0]), Ints(want[0]));
}

TEST(UpgradeOpset, ClipAndPadAttributesBecomeInputs) {
  OnnxModelBuilder b(10, 5);
  b.Input("x", DType::kFloat, {1, 2});
  b.AddNode("Clip", {"x"}, {"c"}, "clip").Float("min", 0).Float("max", 6);
  b.AddNode("Pad", {"c"}, {"y"}, "pad")
      .Ints("pads", {0, 1, 0, 2})
      .Float("value", 1.5f);
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(UpgradeOpset(&m, 13).ok());
  const Node& clip = m.graph.nodes[0];
  ASSERT_EQ(clip.inputs.size(), 3u);
  EXPECT_FLOAT_EQ(m.graph.FindInitializer(clip.inputs[1])->data<float>()[0], 0);
  EXPECT_FLOAT_EQ(m.graph.FindInitializer(clip.inputs[2])->data<float>()[0], 6);
  const Node& pad = m.graph.nodes[1];
  ASSERT_EQ(pad.inputs.size(), 3u);
  EXPECT_THAT(Ints(*m.graph.FindInitializer(pad.inputs[1])),
              ElementsAre(0, 1, 0, 2));
  EXPECT_FLOAT_EQ(m.graph.FindInitializer(pad.inputs[2])->data<float>()[0],
                  1.5f);
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(1, 5));
}

TEST(UpgradeOpset, SoftmaxOnInnerAxisIsMadeExplicit) {
  OnnxModelBuilder b(11, 6);
  b.Input("x", DType::kFloat, {2, 3, 4});
  b.AddNode("Softmax", {"x"}, {"y"}, "sm").Int("axis", 1);
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(UpgradeOpset(&m, 13).ok());
  std::vector<std::string> ops;
  for (const Node& n : m.graph.nodes) ops.push_back(n.op_type);
  EXPECT_THAT(ops, ElementsAre("Shape", "Flatten", "Softmax", "Reshape"));
  EXPECT_EQ(m.graph.nodes[1].GetInt("axis", 0), 1);
  EXPECT_EQ(m.graph.nodes[2].GetInt("axis", 0), 1);  // last axis of [2, 12]
  EXPECT_EQ(m.graph.nodes[3].outputs[0], "y");
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(2, 3, 4));
}

TEST(UpgradeOpset, SoftmaxOnLastAxisOnlyGetsExplicitAxis) {
  OnnxModelBuilder b(11, 6);
  b.Input("x", DType::kFloat, {2, 3});
  b.AddNode("Softmax", {"x"}, {"y"}, "sm");  // default axis 1 = last
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(UpgradeOpset(&m, 13).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].GetInt("axis", 0), -1);
}

TEST(UpgradeOpset, UpsampleBecomesAsymmetricFloorResize) {
  OnnxModelBuilder b(7, 3);
  b.Input("x", DType::kFloat, {1, 1, 2, 2});
  b.AddNode("Upsample", {"x"}, {"y"}, "up").Floats("scales", {1, 1, 2, 3});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(UpgradeOpset(&m, 13).ok());
  const Node& r = m.graph.nodes[0];
  EXPECT_EQ(r.op_type, "Resize");
  EXPECT_EQ(r.GetString("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(r.GetString("nearest_mode", ""), "floor");
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(r.inputs[1], "");
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(1, 1, 4, 6));
}

TEST(UpgradeOpset, ReduceMeanAxesMoveToInputAt18) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {2, 3});
  b.AddNode("ReduceMean", {"x"}, {"y"}, "rm").Ints("axes", {1});
  b.Output("y", DType::kFloat);
  Model m = ImportOrEmpty(b.Build());
  ASSERT_TRUE(UpgradeOpset(&m, 21).ok());
  EXPECT_EQ(m.ir_version, 10);
  const Node& rm = m.graph.nodes[0];
  EXPECT_FALSE(rm.HasAttribute("axes"));
  ASSERT_EQ(rm.inputs.size(), 2u);
  EXPECT_THAT(Ints(*m.graph.FindInitializer(rm.inputs[1])), ElementsAre(1));
  ASSERT_TRUE(InferShapes(&m).ok());
  EXPECT_THAT(m.graph.outputs[0].shape, ElementsAre(2, 1));
}

TEST(UpgradeOpset, RejectsDowngradeAndOutOfRangeTargets) {
  Model m = ImportOrEmpty(MakeUnaryModel("Relu", {2}, 17));
  EXPECT_THAT(UpgradeOpset(&m, 13).message(), HasSubstr("newer than"));
  EXPECT_FALSE(UpgradeOpset(&m, 22).ok());
  EXPECT_TRUE(UpgradeOpset(&m, 17).ok());
}

// Every node test at opsets 7..12 must infer the same output shapes after
// the upgrade to 13 and to 21 as before it.
TEST(UpgradeOpset, NodeTestShapesSurviveUpgrades) {
  const fs::path dir = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata not installed";
  int checked = 0;
  std::vector<std::string> failures;
  for (const auto& e : fs::directory_iterator(dir)) {
    absl::StatusOr<Model> m = ImportOnnxFile(e.path() / "model.onnx");
    if (!m.ok() || m->DefaultOpset() >= 13) continue;
    absl::StatusOr<ShapeInferenceResult> r = InferShapes(&*m);
    if (!r.ok() || !r->unsupported.empty()) continue;
    for (int64_t target : {13, 21}) {
      Model up = *m;
      absl::Status s = UpgradeOpset(&up, target);
      const std::string name = e.path().filename().string();
      if (!s.ok()) {
        failures.push_back(name + ": " + std::string(s.message()));
        continue;
      }
      absl::StatusOr<ShapeInferenceResult> r2 = InferShapes(&up);
      if (!r2.ok()) {
        failures.push_back(name + ": " + std::string(r2.status().message()));
        continue;
      }
      for (size_t i = 0; i < m->graph.outputs.size(); ++i) {
        if (m->graph.outputs[i].shape != up.graph.outputs[i].shape) {
          failures.push_back(name + ": output shape changed");
        }
      }
    }
    ++checked;
  }
  std::cout << "opset upgrade: " << checked << " node tests at opset 7..12, "
            << failures.size() << " failures\n";
  for (const auto& f : failures) std::cout << "  " << f << "\n";
  EXPECT_TRUE(failures.empty());
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace quantd

namespace quantd {
namespace {

TEST(UpgradeOpset, SoftmaxRankComesFromInferenceWhenNotAnnotated) {
  // Classifier head: Gemm -> Softmax(axis 1) on [N, C]; no value_info in
  // the file, yet the rank is known by inference: a single Softmax(-1).
  OnnxModelBuilder b(11, 6);
  b.Input("x", DType::kFloat, {-1, 4});
  b.Initializer("w", Tensor(DType::kFloat, {3, 4}));
  b.AddNode("Gemm", {"x", "w"}, {"g"}, "fc").Int("transB", 1);
  b.AddNode("Softmax", {"g"}, {"y"}, "sm");
  b.Output("y", DType::kFloat);
  absl::StatusOr<Model> m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(UpgradeOpset(&*m, 13).ok());
  ASSERT_EQ(m->graph.nodes.size(), 2u);
  EXPECT_EQ(m->graph.nodes[1].GetInt("axis", 0), -1);
  EXPECT_TRUE(m->graph.value_info.empty());  // the model was not annotated
}

}  // namespace
}  // namespace quantd
