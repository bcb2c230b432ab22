// Engine behaviour: validation up front, feeds, lifetimes and peak memory,
// observer/rewriter hooks, cancellation, and thread-count determinism.
#include "core/executor/executor.h"

#include <cstring>
#include <random>

#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/executor/test_util.h"

namespace quantd {
namespace {

using ::quantd::testing::F;
using ::quantd::testing::Int;
using ::quantd::testing::Ints;
using ::quantd::testing::ModelBuilder;
using ::quantd::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t(DType::kFloat, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.mutable_span<float>()) v = dist(rng);
  return t;
}

TEST(ExecutorTest, UnsupportedOpIsUnimplementedNamingOpAndNode) {
  Model m = ModelBuilder()
                .Input("x")
                .Add("FancyOp", {"x"}, {"y"})
                .Output("y")
                .Build();
  absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(m);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(absl::IsUnimplemented(e.status())) << e.status();
  EXPECT_THAT(e.status().message(), HasSubstr("FancyOp"));
  EXPECT_THAT(e.status().message(), HasSubstr("'FancyOp_0'"));
}

TEST(ExecutorTest, BadAttributeIsInvalidArgumentNamingNode) {
  Model m = ModelBuilder()
                .Input("x")
                .Initializer("w", F({1}, {1, 1, 1, 1}))
                .Add("Conv", {"x", "w"}, {"y"}, {{"strides", Ints({0, 1})}})
                .Output("y")
                .Build();
  absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(m);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  EXPECT_THAT(e.status().message(), HasSubstr("node 'Conv_0' (Conv)"));
}

TEST(ExecutorTest, DanglingInputAndCycleAreRejected) {
  Model dangling = ModelBuilder()
                       .Input("x")
                       .Add("Relu", {"nope"}, {"y"})
                       .Output("y")
                       .Build();
  absl::StatusOr<std::unique_ptr<Executor>> e1 = Executor::Create(dangling);
  ASSERT_FALSE(e1.ok());
  EXPECT_THAT(e1.status().message(), HasSubstr("'nope'"));
  Model cycle = ModelBuilder()
                    .Input("x")
                    .Add("Add", {"x", "b"}, {"a"})
                    .Add("Relu", {"a"}, {"b"})
                    .Output("b")
                    .Build();
  absl::StatusOr<std::unique_ptr<Executor>> e2 = Executor::Create(cycle);
  ASSERT_FALSE(e2.ok());
  EXPECT_THAT(e2.status().message(), HasSubstr("cycle"));
}

TEST(ExecutorTest, RejectsMissingUnknownAndMistypedFeeds) {
  Model m =
      ModelBuilder().Input("x").Add("Relu", {"x"}, {"y"}).Output("y").Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok());
  EXPECT_THAT((*e)->Run({}).status().message(), HasSubstr("'x' has no feed"));
  EXPECT_THAT(
      (*e)->Run({{"x", F({1}, {1})}, {"z", F({1}, {1})}}).status().message(),
      HasSubstr("'z'"));
  EXPECT_THAT((*e)->Run({{"x", testing::I64({1}, {1})}}).status().message(),
              HasSubstr("expected float"));
}

TEST(ExecutorTest, RuntimeShapeErrorNamesNode) {
  Model m = ModelBuilder()
                .Input("a")
                .Input("b")
                .Add("Add", {"a", "b"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok());
  absl::StatusOr<std::map<std::string, Tensor>> out =
      (*e)->Run({{"a", F({1, 2}, {2})}, {"b", F({1, 2, 3}, {3})}});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(out.status()));
  EXPECT_THAT(out.status().message(), HasSubstr("node 'Add_0' (Add)"));
}

TEST(ExecutorTest, HugeClaimedShapeIsResourceExhausted) {
  Model m = ModelBuilder()
                .Input("s", DType::kInt64)
                .Add("ConstantOfShape", {"s"}, {"y"})
                .Output("y")
                .Build();
  ExecutorOptions opts;
  opts.max_tensor_bytes = 1 << 20;
  auto e = Executor::Create(m, opts);
  ASSERT_TRUE(e.ok());
  auto out = (*e)->Run({{"s", testing::I64({1 << 20, 1 << 20}, {2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << out.status();
}

TEST(ExecutorTest, ObserverSeesRewrittenValuesInTopologicalOrder) {
  // y = Relu(x) * 2 via Add(r, r); the rewriter adds 1 to Relu's output, so
  // Add sees r + 1 and y = 2 * (relu(x) + 1).
  Model m = ModelBuilder()
                .Input("x")
                .Add("Relu", {"x"}, {"r"})
                .Add("Add", {"r", "r"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok());
  std::vector<std::string> seen;
  std::vector<float> relu_seen;
  TensorObserver observer = [&](const Node& n, int k, const Tensor& v) {
    seen.push_back(absl::StrCat(n.op_type, ":", k));
    if (n.op_type == "Relu") relu_seen = Values(v);
  };
  TensorRewriter rewriter = [](const Node& n, int, Tensor* v) {
    if (n.op_type != "Relu") return;
    for (float& f : v->mutable_span<float>()) f += 1;
  };
  RunOptions ro;
  ro.observer = &observer;
  ro.rewriter = &rewriter;
  auto out = (*e)->Run({{"x", F({-1, 2}, {2})}}, ro);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(seen, ElementsAre("Relu:0", "Add:0"));
  EXPECT_THAT(relu_seen, ElementsAre(1, 3));
  EXPECT_THAT(Values(out->at("y")), ElementsAre(2, 6));
}

TEST(ExecutorTest, IntermediatesAreFreedAndPeakIsReported) {
  // A chain of 4 Relus over a 1000-float (4000-byte) input. Each tensor,
  // the feed included, is released after its only consumer, so at most a
  // node's input and output are held at once: peak 2 * 4000 bytes, where
  // keeping everything would reach 5 * 4000.
  ModelBuilder b;
  b.Input("x");
  std::string prev = "x";
  for (int i = 0; i < 4; ++i) {
    const std::string out = absl::StrCat("t", i);
    b.Add("Relu", {prev}, {out});
    prev = out;
  }
  b.Output(prev);
  auto e = Executor::Create(b.Build());
  ASSERT_TRUE(e.ok());
  RunStats stats;
  auto out = (*e)->Run({{"x", Random({1000}, 1)}}, {}, &stats);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(stats.peak_bytes, 2 * 4000);
  EXPECT_EQ(stats.nodes_run, 4);
}

TEST(ExecutorTest, ExtraOutputsAreKeptAndUnknownNamesRejected) {
  Model m = ModelBuilder()
                .Input("x")
                .Add("Neg", {"x"}, {"n"})
                .Add("Relu", {"n"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok());
  RunOptions ro;
  ro.extra_outputs = {"n"};
  auto out = (*e)->Run({{"x", F({1, -2}, {2})}}, ro);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(out->at("n")), ElementsAre(-1, 2));
  EXPECT_THAT(Values(out->at("y")), ElementsAre(0, 2));
  ro.extra_outputs = {"missing"};
  EXPECT_FALSE((*e)->Run({{"x", F({1}, {1})}}, ro).ok());
}

TEST(ExecutorTest, CancelledRunStops) {
  Model m =
      ModelBuilder().Input("x").Add("Relu", {"x"}, {"y"}).Output("y").Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok());
  CancellationToken token;
  token.Cancel();
  RunOptions ro;
  ro.cancel = &token;
  auto out = (*e)->Run({{"x", F({1}, {1})}}, ro);
  EXPECT_TRUE(absl::IsCancelled(out.status())) << out.status();
}

TEST(ExecutorTest, IfRunsTheBranchChosenByCondAndReadsOuterScope) {
  // then: y = x + x (reads outer x); else: y = -x.
  auto then_g = std::make_shared<Graph>();
  Node add;
  add.name = "then_add";
  add.op_type = "Add";
  add.inputs = {"x", "x"};
  add.outputs = {"t"};
  then_g->nodes.push_back(add);
  then_g->outputs.push_back({"t"});
  auto else_g = std::make_shared<Graph>();
  Node neg;
  neg.name = "else_neg";
  neg.op_type = "Neg";
  neg.inputs = {"x"};
  neg.outputs = {"u"};
  else_g->nodes.push_back(neg);
  else_g->outputs.push_back({"u"});
  Attribute ta, ea;
  ta.type = ea.type = Attribute::Type::kGraph;
  ta.g = then_g;
  ea.g = else_g;
  Model m =
      ModelBuilder()
          .Input("c", DType::kBool)
          .Input("x")
          .Add("If", {"c"}, {"y"}, {{"then_branch", ta}, {"else_branch", ea}})
          .Output("y")
          .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  auto run = [&](bool c) {
    Tensor cond(DType::kBool, {});
    cond.mutable_data<bool>()[0] = c;
    auto out = (*e)->Run({{"c", cond}, {"x", F({1.5}, {1})}});
    EXPECT_TRUE(out.ok()) << out.status();
    return Values(out->at("y"));
  };
  EXPECT_THAT(run(true), ElementsAre(3));
  EXPECT_THAT(run(false), ElementsAre(-1.5));
}

// A small CNN: conv 3x3 -> relu -> depthwise 3x3 stride 2 -> 1x1 conv ->
// maxpool -> global average pool -> gemm.
Model ConvNet() {
  return ModelBuilder(13)
      .Input("x")
      .Initializer("w1", Random({16, 3, 3, 3}, 2))
      .Initializer("b1", Random({16}, 3))
      .Initializer("w2", Random({16, 1, 3, 3}, 4))
      .Initializer("w3", Random({32, 16, 1, 1}, 5))
      .Initializer("b3", Random({32}, 6))
      .Initializer("wf", Random({10, 32}, 7))
      .Initializer("bf", Random({10}, 8))
      .Add("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Add("Relu", {"c1"}, {"r1"})
      .Add("Conv", {"r1", "w2"}, {"c2"},
           {{"group", Int(16)},
            {"strides", Ints({2, 2})},
            {"pads", Ints({1, 1, 1, 1})}})
      .Add("Conv", {"c2", "w3", "b3"}, {"c3"})
      .Add("MaxPool", {"c3"}, {"p"},
           {{"kernel_shape", Ints({2, 2})}, {"strides", Ints({2, 2})}})
      .Add("GlobalAveragePool", {"p"}, {"g"})
      .Add("Flatten", {"g"}, {"f"})
      .Add("Gemm", {"f", "wf", "bf"}, {"y"}, {{"transB", Int(1)}})
      .Output("c3")
      .Output("y")
      .Build();
}

TEST(ExecutorDeterminismTest, ConvNetOutputsBitIdenticalFor0To2Threads) {
  const Tensor x = Random({2, 3, 40, 40}, 9);
  std::vector<std::map<std::string, Tensor>> results;
  for (int threads : {0, 1, 2}) {
    ThreadPool pool(threads);
    ExecutorOptions opts;
    opts.pool = threads == 0 ? nullptr : &pool;
    auto e = Executor::Create(ConvNet(), opts);
    ASSERT_TRUE(e.ok()) << e.status();
    auto out = (*e)->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    results.push_back(*std::move(out));
  }
  for (size_t i = 1; i < results.size(); ++i) {
    for (const char* name : {"c3", "y"}) {
      const Tensor& a = results[0].at(name);
      const Tensor& b = results[i].at(name);
      ASSERT_EQ(a.shape(), b.shape());
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0)
          << name << " differs with pool config " << i;
    }
  }
}

// Batch 1 exercises every shape-only split that keeps two threads busy on a
// single image: narrowed conv column tiles (c1), a single-item
// ConvTranspose split by columns and channels (u), output-channel blocks of
// a wide 1x1 conv (c2).
Model DecoderNet() {
  return ModelBuilder(13)
      .Input("x")
      .Initializer("w1", Random({24, 8, 3, 3}, 11))
      .Initializer("wt", Random({24, 16, 2, 2}, 12))
      .Initializer("bt", Random({16}, 13))
      .Initializer("w2", Random({160, 16, 1, 1}, 14))
      .Add("Conv", {"x", "w1"}, {"c1"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Add("ConvTranspose", {"c1", "wt", "bt"}, {"u"},
           {{"strides", Ints({2, 2})}})
      .Add("Conv", {"u", "w2"}, {"c2"})
      .Output("c1")
      .Output("u")
      .Output("c2")
      .Build();
}

TEST(ExecutorDeterminismTest, Batch1SplitsBitIdenticalFor0To2Threads) {
  const Tensor x = Random({1, 8, 20, 20}, 15);
  std::vector<std::map<std::string, Tensor>> results;
  for (int threads : {0, 1, 2}) {
    ThreadPool pool(threads);
    ExecutorOptions opts;
    opts.pool = threads == 0 ? nullptr : &pool;
    auto e = Executor::Create(DecoderNet(), opts);
    ASSERT_TRUE(e.ok()) << e.status();
    auto out = (*e)->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    results.push_back(*std::move(out));
  }
  for (size_t i = 1; i < results.size(); ++i) {
    for (const char* name : {"c1", "u", "c2"}) {
      const Tensor& a = results[0].at(name);
      const Tensor& b = results[i].at(name);
      ASSERT_EQ(a.shape(), b.shape());
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0)
          << name << " differs with pool config " << i;
    }
  }
}

TEST(ExecutorThreadsTest, WholeTensorElementwiseOpsAreExactOnTwoThreads) {
  // Same-shape Add and a Where with a scalar operand are one broadcast row of
  // 100003 elements, cut into slices for the two threads. With a[i] = i and
  // b[i] = 2i every sum 3i is exact in float (< 2^24), so the expected
  // values are s[i] = 3i and w[i] = (i % 3 == 0) ? 3i : -1.
  constexpr int64_t kN = 100003;
  Tensor a(DType::kFloat, {kN}), b(DType::kFloat, {kN}), c(DType::kBool, {kN});
  for (int64_t i = 0; i < kN; ++i) {
    a.mutable_data<float>()[i] = static_cast<float>(i);
    b.mutable_data<float>()[i] = static_cast<float>(2 * i);
    c.mutable_data<bool>()[i] = i % 3 == 0;
  }
  Model m = ModelBuilder(13)
                .Input("a")
                .Input("b")
                .Input("c", DType::kBool)
                .Initializer("minus_one", F({-1}, {}))
                .Add("Add", {"a", "b"}, {"s"})
                .Add("Where", {"c", "s", "minus_one"}, {"w"})
                .Output("s")
                .Output("w")
                .Build();
  ThreadPool pool(1);
  ExecutorOptions opts;
  opts.pool = &pool;
  auto e = Executor::Create(std::move(m), opts);
  ASSERT_TRUE(e.ok()) << e.status();
  auto out = (*e)->Run({{"a", a}, {"b", b}, {"c", c}});
  ASSERT_TRUE(out.ok()) << out.status();
  const float* s = out->at("s").data<float>();
  const float* w = out->at("w").data<float>();
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(s[i], static_cast<float>(3 * i)) << i;
    ASSERT_EQ(w[i], i % 3 == 0 ? static_cast<float>(3 * i) : -1.0f) << i;
  }
}

TEST(ExecutorDeterminismTest, ConcurrentRunsOnOneExecutorAgree) {
  ThreadPool pool(2);
  ExecutorOptions opts;
  opts.pool = &pool;
  auto e = Executor::Create(ConvNet(), opts);
  ASSERT_TRUE(e.ok());
  const Tensor x = Random({1, 3, 24, 24}, 10);
  auto ref = (*e)->Run({{"x", x}});
  ASSERT_TRUE(ref.ok());
  std::vector<std::map<std::string, Tensor>> outs(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto r = (*e)->Run({{"x", x}});
      if (r.ok()) outs[i] = *std::move(r);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : outs) {
    ASSERT_EQ(o.count("y"), 1u);
    EXPECT_EQ(std::memcmp(o.at("y").raw(), ref->at("y").raw(),
                          ref->at("y").byte_size()),
              0);
  }
}

}  // namespace
}  // namespace quantd
