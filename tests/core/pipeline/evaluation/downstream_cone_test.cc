// The downstream cone of a node, whole or cut at a depth of interest
// points. First one whose output an If branch reads only from
// the outer scope (hey_jarvis's If nodes read outer tensors and
// initializers): x -> Relu -> r; If(c) then r * k (k an outer initializer)
// else r; -> y. The oracle is the hand-computed y.
#include "core/pipeline/evaluation/downstream_cone.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;

// A branch that gives `out` = r (scale empty) or r * scale, from outer names.
onnx::GraphProto Branch(const std::string& out, const std::string& scale) {
  onnx::GraphProto g;
  g.set_name(out);
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(scale.empty() ? "Identity" : "Mul");
  n->add_input("r");
  if (!scale.empty()) n->add_input(scale);
  n->add_output(out);
  onnx::ValueInfoProto* o = g.add_output();
  o->set_name(out);
  o->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  return g;
}

Model BranchModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {4});
  b.Input("c", DType::kBool, {});
  b.FloatInitializer("k", {3.0f}, {1});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  b.AddNode("If", {"c"}, {"y"}, "branch")
      .GraphAttr("then_branch", Branch("t", "k"))
      .GraphAttr("else_branch", Branch("e", ""));
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

TEST(DownstreamCone, IncludesANodeWhoseBranchReadsTheOutput) {
  const Model m = BranchModel();
  const DownstreamCone cone = BuildDownstreamCone(m, 0, {});
  ASSERT_EQ(cone.model->graph.nodes.size(), 2u);
  EXPECT_EQ(cone.model->graph.nodes[1].name, "branch");
  ASSERT_EQ(cone.model->graph.outputs.size(), 1u);
  EXPECT_EQ(cone.model->graph.outputs[0].name, "y");
}

TEST(DownstreamCone, BranchesOuterInitializerComesAlong) {
  const Model m = BranchModel();
  const DownstreamCone cone = BuildDownstreamCone(m, 0, {{"c", DType::kBool}});
  auto exec = Executor::Create(std::shared_ptr<const Model>(cone.model));
  ASSERT_TRUE(exec.ok()) << exec.status();
  Tensor c(DType::kBool, {});
  c.mutable_data<bool>()[0] = true;
  const std::map<std::string, Tensor> cache = {
      {"x", Tensor::FromVector<float>({-1.0f, 2.0f, -3.0f, 4.0f}, {4})},
      {"c", c}};
  auto feeds = DownstreamConeFeeds(cone, cache);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  auto out = (*exec)->Run(*feeds);
  ASSERT_TRUE(out.ok()) << out.status();
  // relu(x) * 3
  auto y = out->at("y").span<float>();
  EXPECT_THAT(std::vector<float>(y.begin(), y.end()),
              ElementsAre(0.0f, 6.0f, 0.0f, 12.0f));
}

// x -> A -> a -> B -> b -> C -> c -> y, with a side path a -> S -> s and
// a join J(c, s) -> y; the points are b and s. A path ends at its depth-th
// point: from A at depth 1, B (b) and S (s) end theirs, so C and J stay
// out; at depth 2 everything after A is in; at 0 there is no cut.
Model CutModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {4});
  b.AddNode("Relu", {"x"}, {"a"}, "A");
  b.AddNode("Relu", {"a"}, {"b"}, "B");
  b.AddNode("Relu", {"b"}, {"c"}, "C");
  b.AddNode("Relu", {"a"}, {"s"}, "S");
  b.AddNode("Add", {"c", "s"}, {"y"}, "J");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

std::vector<std::string> NodeNames(const DownstreamCone& cone) {
  std::vector<std::string> names;
  for (const Node& n : cone.model->graph.nodes) names.push_back(n.name);
  return names;
}

TEST(DownstreamCone, APathEndsAtItsDepthsPoint) {
  const Model m = CutModel();
  const std::set<std::string> points = {"b", "s"};
  const DownstreamCone one = BuildDownstreamCone(m, 0, {}, points, 1);
  EXPECT_THAT(NodeNames(one), ElementsAre("A", "B", "S"));
  EXPECT_TRUE(one.model->graph.outputs.empty());
  const DownstreamCone two = BuildDownstreamCone(m, 0, {}, points, 2);
  EXPECT_THAT(NodeNames(two), ElementsAre("A", "B", "C", "S", "J"));
  ASSERT_EQ(two.model->graph.outputs.size(), 1u);
  EXPECT_EQ(two.model->graph.outputs[0].name, "y");
  EXPECT_EQ(NodeNames(BuildDownstreamCone(m, 0, {}, points, 0)),
            NodeNames(two));
}

// A start whose own output is a point: at depth 1 its cone is itself.
TEST(DownstreamCone, AStartMakingAPointEndsThereAtDepthOne) {
  const Model m = CutModel();
  const DownstreamCone cone = BuildDownstreamCone(m, 1, {}, {"b", "s"}, 1);
  EXPECT_THAT(NodeNames(cone), ElementsAre("B"));
  EXPECT_THAT(cone.inputs, ElementsAre("a"));
}

// ConeDivergence on a = x + 0.5 (A), r = Relu(a) (B), s = Exp(r) (C), and
// with `reread`, y = Max(s, a) (D) reading `a` again; else y = s. A run fed
// an x that differs only where a stays negative differs at `a` only: Relu
// absorbs it (by hand: relu(-4.5) = relu(-0.5) = 0; max(exp(0), a < 0) = 1).
Model AbsorbingModel(bool reread) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {4});
  b.Initializer("k", Tensor::FromVector<float>({0.5f}, {}));
  b.AddNode("Add", {"x", "k"}, {"a"}, "A");
  b.AddNode("Relu", {"a"}, {"r"}, "B");
  b.AddNode("Exp", {"r"}, {reread ? "s" : "y"}, "C");
  if (reread) b.AddNode("Max", {"s", "a"}, {"y"}, "D");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

const std::vector<float> kCachedX = {-1, -2, 3, 4};

// A run's values of every tensor (the cache a cone is fed from).
std::map<std::string, Tensor> RunAll(const Model& m, std::vector<float> x) {
  auto exec = Executor::Create(m);
  EXPECT_TRUE(exec.ok()) << exec.status();
  RunOptions all;
  for (const Node& n : m.graph.nodes) {
    if (n.outputs[0] != "y") all.extra_outputs.push_back(n.outputs[0]);
  }
  std::map<std::string, Tensor> feeds = {
      {"x", Tensor::FromVector<float>(x, {4})}};
  auto out = (*exec)->Run(feeds, all);
  EXPECT_TRUE(out.ok()) << out.status();
  out->insert(feeds.begin(), feeds.end());
  return *out;
}

struct DivergenceRun {
  absl::Status status;
  std::vector<std::string> nodes_run;  // observed, in order
  std::string converged_at;            // the node after which it converged
  std::map<std::string, bool> differs;
};

// The cone of A run on `x`, tracked against the run on kCachedX and
// cancelled when it converges.
DivergenceRun RunTracked(const Model& m, std::vector<float> x) {
  const auto cache = RunAll(m, kCachedX);
  const DownstreamCone cone = BuildDownstreamCone(m, 0, {});
  const ConeDivergence divergence(cone);
  CancellationToken stop;
  DivergenceRun r;
  ConeDivergence::Tracker tracker(divergence, cache, [&] {
    r.converged_at = r.nodes_run.back();
    stop.Cancel();
  });
  const TensorObserver observer = [&](const Node& n, int k, const Tensor& v) {
    r.nodes_run.push_back(n.name);
    tracker.observer()(n, k, v);
  };
  RunOptions options;
  options.observer = &observer;
  options.cancel = &stop;
  auto exec = Executor::Create(std::shared_ptr<const Model>(cone.model));
  EXPECT_TRUE(exec.ok()) << exec.status();
  r.status = (*exec)
                 ->Run({{"x", Tensor::FromVector<float>(x, {4})}}, options)
                 .status();
  EXPECT_EQ(tracker.converged(), !r.converged_at.empty());
  for (const char* t : {"a", "r", "s", "y"}) r.differs[t] = tracker.Differs(t);
  return r;
}

TEST(ConeDivergence, AChangeAbsorbedByARelUStopsTheRunThere) {
  const DivergenceRun r = RunTracked(AbsorbingModel(false), {-5, -7, 3, 4});
  EXPECT_EQ(r.converged_at, "B");
  EXPECT_THAT(r.nodes_run, ElementsAre("A", "B"));  // C never runs
  EXPECT_EQ(r.status.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(r.differs.at("a"));
  EXPECT_FALSE(r.differs.at("r"));
  EXPECT_FALSE(r.differs.at("y"));
}

// `a` differs and D still has to read it: no convergence before D.
TEST(ConeDivergence, ADifferingTensorWithAConsumerLeftHoldsTheRun) {
  const DivergenceRun r = RunTracked(AbsorbingModel(true), {-5, -7, 3, 4});
  EXPECT_EQ(r.converged_at, "D");
  EXPECT_THAT(r.nodes_run, ElementsAre("A", "B", "C", "D"));
  EXPECT_FALSE(r.differs.at("y"));
}

TEST(ConeDivergence, AChangeReachingAnOutputNeverConverges) {
  const DivergenceRun r = RunTracked(AbsorbingModel(true), {-1, -2, 3, 5});
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.converged_at, "");
  EXPECT_THAT(r.nodes_run, ElementsAre("A", "B", "C", "D"));
  EXPECT_TRUE(r.differs.at("a"));
  EXPECT_TRUE(r.differs.at("y"));
}

// The start is compared even though its cone inputs come from the cache:
// the same feed gives the cache's values, converged at once.
TEST(ConeDivergence, AnUnchangedStartConvergesAtOnce) {
  const DivergenceRun r = RunTracked(AbsorbingModel(true), kCachedX);
  EXPECT_EQ(r.converged_at, "A");
  EXPECT_THAT(r.nodes_run, ElementsAre("A"));
  EXPECT_FALSE(r.differs.at("a"));
}

}  // namespace
}  // namespace quantd
