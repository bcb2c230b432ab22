// In-place element-wise kernels: a unary node at its input's last use writes
// over the input's buffer, with the bytes a fresh buffer would get, and never
// over a value a caller can still see (observer copies, extra outputs, feeds,
// buffers shared with another value).
#include <cstring>
#include <limits>
#include <random>

#include "core/executor/executor.h"
#include "core/runtime/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/executor/test_util.h"

namespace quantd {
namespace {

using ::quantd::testing::F;
using ::quantd::testing::Float;
using ::quantd::testing::I64;
using ::quantd::testing::ModelBuilder;
using ::quantd::testing::Values;
using ::testing::ElementsAre;

Tensor Uniform(int64_t n, float lo, float hi, uint32_t seed) {
  Tensor t(DType::kFloat, {n});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.mutable_span<float>()) v = dist(rng);
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

// x -> Neg -> t -> op -> y: t is fresh and read once, so op may run in place.
Model NegThen(const std::string& op,
              std::map<std::string, Attribute> attrs = {}) {
  return ModelBuilder()
      .Input("x")
      .Add("Neg", {"x"}, {"t"})
      .Add(op, {"t"}, {"y"}, std::move(attrs))
      .Output("y")
      .Build();
}

// x -> Neg -> t, then y = op(t, c) (or op(c, t)): t is fresh and read once,
// c is the caller's feed.
Model NegThenBinary(const std::string& op, bool t_first = true) {
  return ModelBuilder()
      .Input("x")
      .Input("c")
      .Add("Neg", {"x"}, {"t"})
      .Add(op,
           t_first ? std::vector<std::string>{"t", "c"}
                   : std::vector<std::string>{"c", "t"},
           {"y"})
      .Output("y")
      .Build();
}

// An observer that keeps a reference to every value, as calibration's
// SampleKeeper does: no buffer is then unshared, nothing runs in place.
struct KeepAll {
  std::map<std::string, Tensor> kept;
  TensorObserver observer = [this](const Node& node, int k, const Tensor& v) {
    kept[node.outputs[k]] = v;
  };
};

TEST(InPlaceTest, ReluAndClipAfterAFreshValueRunInPlace) {
  Model m = ModelBuilder(11)
                .Input("x")
                .Add("Neg", {"x"}, {"a"})
                .Add("Relu", {"a"}, {"b"})
                .Initializer("lo", F({0.0f}, {}))
                .Initializer("hi", F({6.0f}, {}))
                .Add("Clip", {"b", "lo", "hi"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  RunStats stats;
  auto out = (*e)->Run({{"x", F({-8, -0.5f, 3, 2}, {4})}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  // Neg: {8, 0.5, -3, -2}; Relu: {8, 0.5, 0, 0}; Clip to [0, 6].
  EXPECT_THAT(Values(out->at("y")), ElementsAre(6, 0.5f, 0, 0));
  // The feed is the caller's: Neg allocates; Relu and Clip reuse a's buffer.
  EXPECT_EQ(stats.outputs_in_place, 2);
}

TEST(InPlaceTest, UnaryOpsGiveTheSameBytesInPlaceAsIntoAFreshBuffer) {
  const std::vector<std::string> ops = {"Relu",
                                        "Abs",
                                        "Neg",
                                        "Sign",
                                        "LeakyRelu",
                                        "Sigmoid",
                                        "Tanh",
                                        "HardSigmoid",
                                        "HardSwish",
                                        "Elu",
                                        "Celu",
                                        "Selu",
                                        "ThresholdedRelu",
                                        "Gelu",
                                        "Softplus",
                                        "Softsign",
                                        "Mish",
                                        "Erf",
                                        "Sqrt",
                                        "Exp",
                                        "Log",
                                        "Reciprocal",
                                        "Floor",
                                        "Ceil",
                                        "Round",
                                        "Sin",
                                        "Cos",
                                        "Tan",
                                        "Atan",
                                        "Sinh",
                                        "Cosh",
                                        "Asinh"};
  // Two chunks of the pool's grain and a ragged tail; values around the
  // activations' knees (HardSwish's -3 and 3, ReLU6's 0 and 6).
  const Tensor x = Uniform(2 * 32768 + 37, -8.0f, 8.0f, 7);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    for (const std::string& op : ops) {
      SCOPED_TRACE(op);
      auto e = Executor::Create(NegThen(op), {p});
      ASSERT_TRUE(e.ok()) << e.status();
      RunStats in_place;
      auto a = (*e)->Run({{"x", x}}, {}, &in_place);
      ASSERT_TRUE(a.ok()) << a.status();
      KeepAll keep;
      RunOptions opts;
      opts.observer = &keep.observer;
      RunStats fresh;
      auto b = (*e)->Run({{"x", x}}, opts, &fresh);
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(in_place.outputs_in_place, 1);
      EXPECT_EQ(fresh.outputs_in_place, 0);
      EXPECT_TRUE(SameBytes(a->at("y"), b->at("y")));
    }
  }
}

TEST(InPlaceTest, BinaryOpsGiveTheSameBytesInPlaceAsIntoAFreshBuffer) {
  // t = Neg(x) is fresh and read once; c is the caller's feed (never
  // overwritten). t goes first or second, c is full-size or a scalar.
  const Tensor x = Uniform(2 * 32768 + 37, -8.0f, 8.0f, 11);
  const Tensor full = Uniform(2 * 32768 + 37, 0.5f, 4.0f, 12);
  const Tensor scalar = F({2.5f}, {1});
  ThreadPool pool(2);
  for (const std::string op :
       {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"}) {
    for (const bool t_first : {true, false}) {
      for (const Tensor* c : {&full, &scalar}) {
        SCOPED_TRACE(op + (t_first ? " t,c " : " c,t ") + c->DebugString());
        auto e = Executor::Create(NegThenBinary(op, t_first), {&pool});
        ASSERT_TRUE(e.ok()) << e.status();
        RunStats in_place;
        auto a = (*e)->Run({{"x", x}, {"c", *c}}, {}, &in_place);
        ASSERT_TRUE(a.ok()) << a.status();
        KeepAll keep;
        RunOptions opts;
        opts.observer = &keep.observer;
        auto b = (*e)->Run({{"x", x}, {"c", *c}}, opts);
        ASSERT_TRUE(b.ok()) << b.status();
        // Pow (mixed operand types) has a kernel of its own.
        EXPECT_EQ(in_place.outputs_in_place, op == "Pow" ? 0 : 1);
        EXPECT_TRUE(SameBytes(a->at("y"), b->at("y")));
      }
    }
  }
}

TEST(InPlaceTest, LoneOperandOfSumMaxOrMeanIsTheResultInPlace) {
  for (const std::string op : {"Sum", "Max", "Mean"}) {
    SCOPED_TRACE(op);
    RunStats stats;
    auto e = Executor::Create(NegThen(op));
    ASSERT_TRUE(e.ok()) << e.status();
    auto out = (*e)->Run({{"x", F({1, -2.5f, 0}, {3})}}, {}, &stats);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values(out->at("y")), ElementsAre(-1, 2.5f, 0));
    EXPECT_EQ(stats.outputs_in_place, 1);
  }
}

TEST(InPlaceTest, IntegerAddRunsInPlaceAndWraps) {
  Model m = ModelBuilder()
                .Input("x", DType::kInt32)
                .Input("c", DType::kInt32)
                .Add("Neg", {"x"}, {"t"})
                .Add("Add", {"c", "t"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  const Tensor x = Tensor::FromVector<int32_t>({5, -7, -2147483647}, {3});
  const Tensor c = Tensor::FromVector<int32_t>({1}, {1});
  RunStats stats;
  auto out = (*e)->Run({{"x", x}, {"c", c}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  // t = {-5, 7, 2147483647}; 1 + t wraps in the last element.
  EXPECT_THAT(out->at("y").span<int32_t>(),
              ElementsAre(-4, 8, std::numeric_limits<int32_t>::min()));
  EXPECT_EQ(stats.outputs_in_place, 1);
}

TEST(InPlaceTest, BroadcastOperandIsNotTheOutput) {
  // t = Neg(x) has shape [1]: the [3] output cannot live in its buffer.
  auto e = Executor::Create(NegThenBinary("Add"));
  ASSERT_TRUE(e.ok()) << e.status();
  RunStats stats;
  auto out =
      (*e)->Run({{"x", F({1}, {1})}, {"c", F({1, 2, 3}, {3})}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(out->at("y")), ElementsAre(0, 1, 2));
  EXPECT_EQ(stats.outputs_in_place, 0);
}

TEST(InPlaceTest, ComparisonOutputIsNeverInPlace) {
  // Greater's float operands cannot hold its bool output.
  auto e = Executor::Create(NegThenBinary("Greater"));
  ASSERT_TRUE(e.ok()) << e.status();
  RunStats stats;
  auto out =
      (*e)->Run({{"x", F({1, -2}, {2})}, {"c", F({0, 0}, {2})}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->at("y").dtype(), DType::kBool);
  EXPECT_THAT(out->at("y").span<bool>(), ElementsAre(false, true));
  EXPECT_EQ(stats.outputs_in_place, 0);
}

TEST(InPlaceTest, ClipOnIntegersRunsInPlace) {
  Model m = ModelBuilder(17)
                .Input("x", DType::kInt64)
                .Add("Neg", {"x"}, {"t"})
                .Initializer("lo", I64({-2}, {}))
                .Initializer("hi", I64({5}, {}))
                .Add("Clip", {"t", "lo", "hi"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  RunStats stats;
  auto out = (*e)->Run({{"x", I64({-9, -3, 0, 1, 4}, {5})}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  // Neg: {9, 3, 0, -1, -4}; Clip to [-2, 5].
  EXPECT_THAT(out->at("y").span<int64_t>(), ElementsAre(5, 3, 0, -1, -2));
  EXPECT_EQ(stats.outputs_in_place, 1);
}

TEST(InPlaceTest, ValueKeptByTheObserverIsNotOverwritten) {
  auto e = Executor::Create(NegThen("Relu"));
  ASSERT_TRUE(e.ok()) << e.status();
  KeepAll keep;
  RunOptions opts;
  opts.observer = &keep.observer;
  RunStats stats;
  auto out = (*e)->Run({{"x", F({1, -2, 3}, {3})}}, opts, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(keep.kept.at("t")), ElementsAre(-1, 2, -3));
  EXPECT_THAT(Values(out->at("y")), ElementsAre(0, 2, 0));
  EXPECT_EQ(stats.outputs_in_place, 0);
}

TEST(InPlaceTest, ExtraOutputIsNotOverwritten) {
  auto e = Executor::Create(NegThen("Relu"));
  ASSERT_TRUE(e.ok()) << e.status();
  RunOptions opts;
  opts.extra_outputs = {"t"};
  RunStats stats;
  auto out = (*e)->Run({{"x", F({1, -2, 3}, {3})}}, opts, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(out->at("t")), ElementsAre(-1, 2, -3));
  EXPECT_THAT(Values(out->at("y")), ElementsAre(0, 2, 0));
  EXPECT_EQ(stats.outputs_in_place, 0);
}

TEST(InPlaceTest, FeedIsNotOverwritten) {
  Model m =
      ModelBuilder().Input("x").Add("Relu", {"x"}, {"y"}).Output("y").Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  const Tensor x = F({-1, 2}, {2});
  RunStats stats;
  auto out = (*e)->Run({{"x", x}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(x), ElementsAre(-1, 2));
  EXPECT_THAT(Values(out->at("y")), ElementsAre(0, 2));
  EXPECT_EQ(stats.outputs_in_place, 0);
}

TEST(InPlaceTest, ValueReadByALaterNodeIsNotOverwritten) {
  // t feeds the Relu and then the Add: the Relu is not its last reader.
  Model m = ModelBuilder()
                .Input("x")
                .Add("Neg", {"x"}, {"t"})
                .Add("Relu", {"t"}, {"r"})
                .Add("Add", {"t", "r"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  auto out = (*e)->Run({{"x", F({1, -2}, {2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // t = {-1, 2}, r = {0, 2}, y = t + r.
  EXPECT_THAT(Values(out->at("y")), ElementsAre(-1, 4));
}

TEST(InPlaceTest, BufferSharedWithAReshapeIsNotOverwritten) {
  // u shares t's buffer; the Relu is t's last reader but u lives on.
  Model m = ModelBuilder()
                .Input("x")
                .Add("Neg", {"x"}, {"t"})
                .Initializer("shape", I64({2, 1}, {2}))
                .Add("Reshape", {"t", "shape"}, {"u"})
                .Add("Relu", {"t"}, {"r"})
                .Add("Flatten", {"u"}, {"f"})
                .Output("r")
                .Output("f")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  RunStats stats;
  auto out = (*e)->Run({{"x", F({1, -2}, {2})}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(out->at("r")), ElementsAre(0, 2));
  EXPECT_THAT(Values(out->at("f")), ElementsAre(-1, 2));
  EXPECT_EQ(stats.outputs_in_place, 0);
}

TEST(InPlaceTest, PeakCountsAnInPlaceOutputOnce) {
  // x (4000 bytes) lives to the end. Neg: x + a = 8000 bytes. The Relu
  // reuses a's buffer: x + b = 8000 (12000 with a fresh buffer). ReduceSum
  // adds 4 bytes, and Mul's output replaces nothing: x + s + y = 8004.
  Model m = ModelBuilder()
                .Input("x")
                .Add("Neg", {"x"}, {"a"})
                .Add("Relu", {"a"}, {"b"})
                .Add("ReduceSum", {"b"}, {"s"})
                .Add("Mul", {"x", "s"}, {"y"})
                .Output("y")
                .Build();
  auto e = Executor::Create(m);
  ASSERT_TRUE(e.ok()) << e.status();
  RunStats stats;
  auto out = (*e)->Run({{"x", Uniform(1000, -1, 1, 3)}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(stats.outputs_in_place, 1);
  EXPECT_EQ(stats.peak_bytes, 2 * 4000 + 4);
}

}  // namespace
}  // namespace quantd
