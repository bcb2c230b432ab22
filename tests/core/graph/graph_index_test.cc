#include "core/graph/graph_index.h"

#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;

TEST(GraphIndex, ProducersConsumersAndOutputs) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.FloatInitializer("c", {1, 2}, {2});
  b.AddNode("Add", {"x", "c"}, {"a"}, "add");
  b.AddNode("Mul", {"a", "a"}, {"m"}, "mul");  // reads "a" twice: one consumer
  b.AddNode("Neg", {"a"}, {"y"}, "neg");
  b.Output("y", DType::kFloat);
  b.Output("m", DType::kFloat);
  absl::StatusOr<Model> m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  GraphIndex index(m->graph);
  EXPECT_EQ(index.Producer("a"), 0);
  EXPECT_EQ(index.Producer("x"), -1);
  EXPECT_EQ(index.Producer("c"), -1);
  EXPECT_THAT(index.Consumers("a"), ElementsAre(1, 2));
  EXPECT_THAT(index.Consumers("c"), ElementsAre(0));
  EXPECT_TRUE(index.IsGraphOutput("y"));
  EXPECT_FALSE(index.IsGraphOutput("a"));
  EXPECT_TRUE(index.IsGraphInput("x"));
  EXPECT_EQ(index.NumUses("m"), 1);
  EXPECT_EQ(index.SoleConsumer(0), -1);  // two readers of "a"
  EXPECT_EQ(index.SoleConsumer(1), -1);  // "m" is a graph output
}

TEST(GraphIndex, SubgraphReadsCountAsConsumers) {
  OnnxModelBuilder then_b, else_b;
  then_b.AddNode("Neg", {"outer"}, {"t"});
  then_b.Output("t", DType::kFloat);
  else_b.AddNode("Abs", {"outer"}, {"e"});
  else_b.Output("e", DType::kFloat);
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {2});
  b.Input("cond", DType::kBool, {});
  b.AddNode("Relu", {"x"}, {"outer"}, "relu");
  b.AddNode("If", {"cond"}, {"y"}, "if")
      .GraphAttr("then_branch", then_b.Build().graph())
      .GraphAttr("else_branch", else_b.Build().graph());
  b.Output("y", DType::kFloat);
  absl::StatusOr<Model> m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  GraphIndex index(m->graph);
  EXPECT_THAT(index.Consumers("outer"), ElementsAre(1));
  EXPECT_EQ(index.SoleConsumer(0), 1);
}

}  // namespace
}  // namespace quantd
