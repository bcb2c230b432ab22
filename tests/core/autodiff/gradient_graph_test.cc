// GradientGraph as a whole: paths, seeds at intermediates, errors.
#include "core/autodiff/gradient_graph.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/core/autodiff/fd_check.h"
#include "tests/core/executor/test_util.h"

namespace quantd::autodiff {
namespace {

using quantd::testing::F;
using quantd::testing::Int;
using quantd::testing::Ints;
using quantd::testing::ModelBuilder;
using testing::FdCheck;
using testing::RandomTensor;
using testing::RunFdCheck;

// x -> Conv -> BN -> HardSwish -> GlobalAveragePool -> Flatten -> Gemm
// -> Softmax, the shape of a small classifier.
Model SmallClassifier() {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({4, 3, 3, 3}, 50, 0.5f))
      .Initializer("scale", RandomTensor({4}, 51, 0.2f, 1.0f))
      .Initializer("bias", RandomTensor({4}, 52))
      .Initializer("mean", RandomTensor({4}, 53))
      .Initializer("var", RandomTensor({4}, 54, 0.1f, 1.0f))
      .Initializer("fc", RandomTensor({5, 4}, 55))
      .Add("Conv", {"x", "w"}, {"c"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Add("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"bn"})
      .Add("HardSwish", {"bn"}, {"h"})
      .Add("GlobalAveragePool", {"h"}, {"p"})
      .Add("Flatten", {"p"}, {"f"})
      .Add("Gemm", {"f", "fc"}, {"logits"}, {{"transB", Int(1)}})
      .Add("Softmax", {"logits"}, {"y"})
      .Output("y");
  return b.Build();
}

TEST(GradientGraphTest, ClassifierMatchesFiniteDifferences) {
  FdCheck c;
  c.model = SmallClassifier();
  c.feeds = {{"x", RandomTensor({2, 3, 5, 5}, 56)}};
  c.initializers = {"w", "fc"};
  EXPECT_GT(RunFdCheck(c), 0);
}

// An observer receives each requested tensor's gradient once, equal to the
// gradient Backward returns without one, and nothing is returned for them.
TEST(GradientGraphTest, ObserverGetsTheSameTensorGradientsOnce) {
  GradientOptions options;
  options.tensor_gradients = {"c", "bn", "h", "logits", "x"};
  auto g = GradientGraph::Create(
      std::make_shared<const Model>(SmallClassifier()), options);
  ASSERT_TRUE(g.ok()) << g.status();
  auto tape = (*g)->Forward({{"x", RandomTensor({2, 3, 5, 5}, 57)}});
  ASSERT_TRUE(tape.ok()) << tape.status();
  const std::map<std::string, Tensor> seeds = {{"y", RandomTensor({2, 5}, 58)}};
  auto returned = (*g)->Backward(*tape, seeds);
  ASSERT_TRUE(returned.ok()) << returned.status();
  ASSERT_EQ(returned->tensors.size(), 5u);
  std::map<std::string, int> calls;
  std::map<std::string, Tensor> observed;
  const GradientObserver observer = [&](const std::string& name,
                                        const Tensor& grad) {
    ++calls[name];
    observed[name] = grad.Clone();
  };
  auto with = (*g)->Backward(*tape, seeds, nullptr, nullptr, &observer);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_TRUE(with->tensors.empty());
  for (const auto& [name, grad] : returned->tensors) {
    SCOPED_TRACE(name);
    EXPECT_EQ(calls[name], 1);
    ASSERT_EQ(observed[name].shape(), grad.shape());
    EXPECT_EQ(std::memcmp(observed[name].data<float>(), grad.data<float>(),
                          grad.num_elements() * sizeof(float)),
              0);
  }
  // The input gradient is still returned.
  ASSERT_TRUE(with->inputs.count("x"));
  EXPECT_EQ(std::memcmp(with->inputs["x"].data<float>(),
                        returned->inputs["x"].data<float>(),
                        returned->inputs["x"].num_elements() * sizeof(float)),
            0);
}

TEST(GradientGraphTest, SeedAtAnIntermediateBackpropagatesFromThere) {
  // d(sum(bn * s))/dx with the seed s at the BN output equals the gradient
  // of a graph that ends at the BN output.
  Model full = SmallClassifier();
  Model cut = full;
  cut.graph.nodes.resize(2);
  cut.graph.outputs[0].name = "bn";
  auto a = GradientGraph::Create(std::make_shared<const Model>(full));
  auto b = GradientGraph::Create(std::make_shared<const Model>(cut));
  ASSERT_TRUE(a.ok() && b.ok());
  const Tensor x = RandomTensor({1, 3, 4, 4}, 57);
  auto ta = (*a)->Forward({{"x", x}});
  auto tb = (*b)->Forward({{"x", x}});
  ASSERT_TRUE(ta.ok() && tb.ok());
  const Tensor seed = RandomTensor(tb->values.at("bn").shape(), 58);
  auto ga = (*a)->Backward(*ta, {{"bn", seed}});
  auto gb = (*b)->Backward(*tb, {{"bn", seed}});
  ASSERT_TRUE(ga.ok()) << ga.status();
  ASSERT_TRUE(gb.ok()) << gb.status();
  const Tensor& da = ga->inputs.at("x");
  const Tensor& db = gb->inputs.at("x");
  for (int64_t i = 0; i < da.num_elements(); ++i) {
    EXPECT_EQ(da.data<float>()[i], db.data<float>()[i]) << i;
  }
}

TEST(GradientGraphTest, UnsupportedOpOnThePathNamesTheNode) {
  ModelBuilder b;
  b.Input("x").Add("Erf", {"x"}, {"y"}).Output("y");
  auto g = GradientGraph::Create(std::make_shared<const Model>(b.Build()));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(g.status().message().find("node 'Erf_0' (Erf)"), std::string::npos)
      << g.status();
}

TEST(GradientGraphTest, ShapeComputationsOffThePathNeedNoGradient) {
  // Reshape(x, Shape(x)): the shape input depends on x but carries none.
  ModelBuilder b;
  b.Input("x")
      .Add("Shape", {"x"}, {"s"})
      .Add("Reshape", {"x", "s"}, {"y"})
      .Output("y");
  FdCheck c;
  c.model = b.Build();
  c.feeds = {{"x", RandomTensor({2, 3}, 59)}};
  EXPECT_GT(RunFdCheck(c), 0);
}

TEST(GradientGraphTest, SeedOffThePathIsInvalid) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("k", F({2.0f}, {1}))
      .Add("Relu", {"k"}, {"r"})
      .Add("Mul", {"x", "r"}, {"y"})
      .Output("y");
  auto g = GradientGraph::Create(std::make_shared<const Model>(b.Build()));
  ASSERT_TRUE(g.ok()) << g.status();
  auto tape = (*g)->Forward({{"x", F({1, 2}, {2})}});
  ASSERT_TRUE(tape.ok());
  auto grads = (*g)->Backward(*tape, {{"r", F({1}, {1})}});
  EXPECT_EQ(grads.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GradientGraphTest, UnknownInitializerIsInvalid) {
  GradientOptions o;
  o.initializers = {"nope"};
  auto g = GradientGraph::Create(
      std::make_shared<const Model>(SmallClassifier()), o);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("'nope'"), std::string::npos);
}

TEST(GradientGraphTest, InitializerTheSeedDoesNotReachGetsZeros) {
  GradientOptions o;
  o.initializers = {"fc"};
  auto g = GradientGraph::Create(
      std::make_shared<const Model>(SmallClassifier()), o);
  ASSERT_TRUE(g.ok()) << g.status();
  auto tape = (*g)->Forward({{"x", RandomTensor({1, 3, 4, 4}, 60)}});
  ASSERT_TRUE(tape.ok());
  auto grads = (*g)->Backward(
      *tape, {{"bn", RandomTensor(tape->values.at("bn").shape(), 61)}});
  ASSERT_TRUE(grads.ok()) << grads.status();
  for (float v : grads->initializers.at("fc").span<float>()) EXPECT_EQ(v, 0.0f);
}

// y = Erf(x) * w: with input_gradients off nothing runs backward before
// the kernel (Erf has no backward pass), and d(sum y)/dw = Erf(x) by hand.
TEST(GradientGraphTest, WithoutInputGradientsOnlyTheKernelsPathRuns) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", F({3.0f, -2.0f}, {2}))
      .Add("Erf", {"x"}, {"e"})
      .Add("Mul", {"e", "w"}, {"y"})
      .Output("y");
  auto model = std::make_shared<const Model>(b.Build());
  GradientOptions o;
  o.initializers = {"w"};
  EXPECT_EQ(GradientGraph::Create(model, o).status().code(),
            absl::StatusCode::kUnimplemented);
  o.input_gradients = false;
  auto g = GradientGraph::Create(model, o);
  ASSERT_TRUE(g.ok()) << g.status();
  auto tape = (*g)->Forward({{"x", F({0.5f, -1.0f}, {2})}});
  ASSERT_TRUE(tape.ok()) << tape.status();
  auto grads = (*g)->Backward(*tape, {{"y", F({1.0f, 1.0f}, {2})}});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TRUE(grads->inputs.empty());
  const float* dw = grads->initializers.at("w").data<float>();
  EXPECT_FLOAT_EQ(dw[0], std::erf(0.5f));
  EXPECT_FLOAT_EQ(dw[1], std::erf(-1.0f));
}

}  // namespace
}  // namespace quantd::autodiff
