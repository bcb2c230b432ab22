// Channel equalization from observed ranges: the scales by the formula, the
// sites it finds and refuses, the rewrites with hand-derived values, the
// function kept (the original model's output as the oracle), the ranges
// from a float pass, and a whole job whose QDQ model gets closer to the
// float model on held-out inputs.
#include "core/pipeline/prep/data_channel_equalization.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "clients/batch/proto_output.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/job/ptq_options.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/ptq/channel_ranges.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace {
// Its own namespace: the unity build shares the test binary's other files'
// anonymous helpers.
namespace dce_test {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(EqualizationScales, FollowTheFormulaAndTheCap) {
  const double nan = std::nan("");
  // Widest channel 8: s = (8 / m)^alpha, at most the cap; 1 where m is 0
  // or not finite.
  EXPECT_THAT(EqualizationScales({8, 2, 0.5, 0, nan}, 0.5, 16),
              ElementsAre(DoubleEq(1), DoubleEq(2), DoubleEq(4), DoubleEq(1),
                          DoubleEq(1)));
  EXPECT_THAT(EqualizationScales({8, 2, 0.5}, 1, 4),
              ElementsAre(DoubleEq(1), DoubleEq(4), DoubleEq(4)));
  EXPECT_THAT(EqualizationScales({0, 0}, 0.5, 16),
              ElementsAre(DoubleEq(1), DoubleEq(1)));
}

TEST(DataChannelEqualizationOptions, OutOfRangeValuesNameTheField) {
  const double nan = std::nan("");
  for (double alpha : {0.0, -0.5, 1.5, nan}) {
    v1::QuantizationConfig c;
    c.set_data_channel_equalization_alpha(alpha);
    auto o = ResolvePtqOptions(c, false);
    ASSERT_FALSE(o.ok()) << alpha;
    EXPECT_THAT(o.status().message(),
                HasSubstr("quantization.data_channel_equalization_alpha"));
  }
  for (double cap : {0.5, std::numeric_limits<double>::infinity(), nan}) {
    v1::QuantizationConfig c;
    c.set_data_channel_equalization_max_scale(cap);
    auto o = ResolvePtqOptions(c, false);
    ASSERT_FALSE(o.ok()) << cap;
    EXPECT_THAT(o.status().message(),
                HasSubstr("quantization.data_channel_equalization_max_scale"));
  }
  v1::QuantizationConfig c;
  c.set_data_channel_equalization(true);
  c.set_data_channel_equalization_alpha(1);
  c.set_data_channel_equalization_max_scale(1);  // 1: no scaling, allowed
  auto o = ResolvePtqOptions(c, false);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->data_channel_equalization);
  EXPECT_EQ(o->data_channel_equalization_alpha, 1);
}

// x [1, 2, 1, 2] -> Conv 1x1 (w1, b1) -> t -> Conv 1x1 (w2) -> y.
OnnxModelBuilder ConvConvBuilder() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 1, 2});
  b.FloatInitializer("w1", {1, 2, 3, 4}, {2, 2, 1, 1});
  b.FloatInitializer("b1", {0.5f, -1}, {2});
  b.FloatInitializer("w2", {1, 2, 3, 4}, {2, 2, 1, 1});
  b.AddNode("Conv", {"x", "w1", "b1"}, {"t"}, "conv1");
  b.AddNode("Conv", {"t", "w2"}, {"y"}, "conv2");
  b.Output("y", DType::kFloat);
  return b;
}

Model Import(const OnnxModelBuilder& b) {
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

std::vector<float> Run(const Model& m, const Tensor& x) {
  auto exec = Executor::Create(std::make_shared<const Model>(m));
  EXPECT_TRUE(exec.ok()) << exec.status();
  auto out = (*exec)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status();
  auto s = out->at("y").span<float>();
  return {s.begin(), s.end()};
}

std::vector<float> Values(const Model& m, const std::string& name) {
  auto s = m.graph.FindInitializer(name)->span<float>();
  return {s.begin(), s.end()};
}

void ExpectSameFunction(const Model& before, const Model& after,
                        const Tensor& x) {
  const std::vector<float> a = Run(before, x), b = Run(after, x);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], a[i], 1e-5 * std::max(1.0f, std::fabs(a[i])));
  }
}

TEST(DataChannelEqualization, ConvToConvScalesRowsAndColumns) {
  const Model original = Import(ConvConvBuilder());
  Model m = original;
  const std::vector<EqualizationSite> sites = FindEqualizationSites(m);
  ASSERT_EQ(sites.size(), 1u);  // x is a graph input: no producer
  EXPECT_EQ(sites[0].tensor, "t");
  EXPECT_EQ(sites[0].channels, 2);
  auto n = ApplyChannelEqualization({{"t", {1, 4}}}, &m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  // conv1's output channel 1 (row 1 and its bias) times 4; conv2's input
  // channel 1 (column 1 of [M, C]) divided by 4.
  EXPECT_THAT(Values(m, "w1"),
              ElementsAre(FloatEq(1), FloatEq(2), FloatEq(12), FloatEq(16)));
  EXPECT_THAT(Values(m, "b1"), ElementsAre(FloatEq(0.5f), FloatEq(-4)));
  EXPECT_THAT(Values(m, "w2"),
              ElementsAre(FloatEq(1), FloatEq(0.5f), FloatEq(3), FloatEq(1)));
  ExpectSameFunction(
      original, m,
      Tensor::FromVector<float>({1.5f, -0.5f, 0.25f, 2.0f}, {1, 2, 1, 2}));
}

// x -> Relu -> Mul(a) -> Add(b) -> t -> depthwise Conv 1x1 (w2) -> y: the
// learnable affine block after PP-LCNet's activations.
TEST(DataChannelEqualization, ScalarAffineBecomesPerChannel) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 1, 2});
  b.FloatInitializer("a", {0.5f}, {1});
  b.FloatInitializer("bias", {-0.25f}, {1});
  b.FloatInitializer("w2", {3, 5}, {2, 1, 1, 1});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  b.AddNode("Mul", {"r", "a"}, {"m"}, "scale");
  b.AddNode("Add", {"bias", "m"}, {"t"}, "shift");  // constant first
  b.AddNode("Conv", {"t", "w2"}, {"y"}, "dw").Int("group", 2);
  b.Output("y", DType::kFloat);
  const Model original = Import(b);
  Model m = original;
  ASSERT_EQ(FindEqualizationSites(m).size(), 1u);
  ASSERT_EQ(*ApplyChannelEqualization({{"t", {2, 0.5}}}, &m), 1);
  // [C, 1, 1] constants broadcasting over the [N, C, H, W] input.
  EXPECT_EQ(m.graph.FindInitializer("a")->shape(),
            (std::vector<int64_t>{2, 1, 1}));
  EXPECT_THAT(Values(m, "a"), ElementsAre(FloatEq(1), FloatEq(0.25f)));
  EXPECT_THAT(Values(m, "bias"), ElementsAre(FloatEq(-0.5f), FloatEq(-0.125f)));
  EXPECT_THAT(Values(m, "w2"), ElementsAre(FloatEq(1.5f), FloatEq(10)));
  ExpectSameFunction(
      original, m,
      Tensor::FromVector<float>({1.5f, -0.5f, 0.25f, 2.0f}, {1, 2, 1, 2}));
}

// x -> ConvTranspose 1x1 (wt [C_in, M], bias) -> Relu -> MaxPool 1x1 -> t
// -> Conv 1x1 (w2) -> y: the scale reaches the ConvTranspose's output
// channels (axis 1 of its weight) through the Relu and the pool.
TEST(DataChannelEqualization, ScaleReachesAConvTransposeThroughReluAndPool) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 1, 2});
  b.FloatInitializer("wt", {1, 2, 3, 4}, {2, 2, 1, 1});
  b.FloatInitializer("bt", {0.5f, 1}, {2});
  b.FloatInitializer("w2", {1, 2, 3, 4}, {2, 2, 1, 1});
  b.AddNode("ConvTranspose", {"x", "wt", "bt"}, {"c"}, "up");
  b.AddNode("Relu", {"c"}, {"r"}, "relu");
  b.AddNode("MaxPool", {"r"}, {"t"}, "pool").Ints("kernel_shape", {1, 1});
  b.AddNode("Conv", {"t", "w2"}, {"y"}, "conv2");
  b.Output("y", DType::kFloat);
  const Model original = Import(b);
  Model m = original;
  ASSERT_EQ(FindEqualizationSites(m).size(), 1u);
  ASSERT_EQ(*ApplyChannelEqualization({{"t", {1, 2}}}, &m), 1);
  // wt [C_in, M]: column 1 (output channel 1) doubled; bias[1] doubled.
  EXPECT_THAT(Values(m, "wt"),
              ElementsAre(FloatEq(1), FloatEq(4), FloatEq(3), FloatEq(8)));
  EXPECT_THAT(Values(m, "bt"), ElementsAre(FloatEq(0.5f), FloatEq(2)));
  EXPECT_THAT(Values(m, "w2"),
              ElementsAre(FloatEq(1), FloatEq(1), FloatEq(3), FloatEq(2)));
  ExpectSameFunction(
      original, m,
      Tensor::FromVector<float>({1.5f, -0.5f, 0.25f, -2.0f}, {1, 2, 1, 2}));
}

TEST(DataChannelEqualization, NoSiteWhereAReaderOrProducerCannotAbsorb) {
  {  // t is also read by a Relu
    OnnxModelBuilder b = ConvConvBuilder();
    b.AddNode("Relu", {"t"}, {"u"}, "relu");
    b.Output("u", DType::kFloat);
    EXPECT_THAT(FindEqualizationSites(Import(b)), IsEmpty());
  }
  {  // t is a graph output
    OnnxModelBuilder b = ConvConvBuilder();
    b.Output("t", DType::kFloat);
    EXPECT_THAT(FindEqualizationSites(Import(b)), IsEmpty());
  }
  {  // conv1's weight is shared with another Conv
    OnnxModelBuilder b = ConvConvBuilder();
    b.AddNode("Conv", {"x", "w1"}, {"z"}, "conv3");
    b.Output("z", DType::kFloat);
    EXPECT_THAT(FindEqualizationSites(Import(b)), IsEmpty());
  }
  {  // the Relu between the layers has a second reader
    OnnxModelBuilder b(13);
    b.Input("x", DType::kFloat, {1, 2, 1, 2});
    b.FloatInitializer("w1", {1, 2, 3, 4}, {2, 2, 1, 1});
    b.FloatInitializer("w2", {1, 2, 3, 4}, {2, 2, 1, 1});
    b.AddNode("Conv", {"x", "w1"}, {"c"}, "conv1");
    b.AddNode("Relu", {"c"}, {"t"}, "relu");
    b.AddNode("Conv", {"t", "w2"}, {"y"}, "conv2");
    b.AddNode("Sigmoid", {"c"}, {"z"}, "other");
    b.Output("y", DType::kFloat);
    b.Output("z", DType::kFloat);
    EXPECT_THAT(FindEqualizationSites(Import(b)), IsEmpty());
  }
  {  // Mul by a per-element constant: not a scalar affine
    OnnxModelBuilder b(13);
    b.Input("x", DType::kFloat, {1, 2, 1, 2});
    b.FloatInitializer("a", {0.5f, 2}, {2});
    b.FloatInitializer("w2", {3, 5}, {2, 1, 1, 1});
    b.AddNode("Mul", {"x", "a"}, {"t"}, "scale");
    b.AddNode("Conv", {"t", "w2"}, {"y"}, "dw").Int("group", 2);
    b.Output("y", DType::kFloat);
    EXPECT_THAT(FindEqualizationSites(Import(b)), IsEmpty());
  }
}

SampleFeeds Sample(std::vector<float> x) {
  return {{"x", Tensor::FromVector<float>(x, {1, 2, 1, 2})}};
}

TEST(CollectChannelRanges, LargestMagnitudePerChannelOverSamples) {
  const Model m = Import(ConvConvBuilder());
  auto exec = Executor::Create(std::make_shared<const Model>(m));
  ASSERT_TRUE(exec.ok());
  // t = w1 x + b1 per position: channel 0 = x0 + 2 x1 + 0.5,
  // channel 1 = 3 x0 + 4 x1 - 1, with x0, x1 the channels at one position.
  // Sample 1, positions (x0, x1) = (1, 0), (0, 1): t0 1.5, 2.5; t1 2, 3.
  // Sample 2, (x0, x1) = (-2, 0), (0, 0.5):          t0 -1.5, 1.5; t1 -7, 1.
  const std::vector<SampleFeeds> samples = {Sample({1, 0, 0, 1}),
                                            Sample({-2, 0, 0, 0.5f})};
  for (int threads : {0, 2}) {
    ThreadPool pool(threads);
    auto ranges = CollectChannelRanges(**exec, samples, {{"t", 2}}, &pool,
                                       nullptr, nullptr);
    ASSERT_TRUE(ranges.ok()) << ranges.status();
    EXPECT_THAT(ranges->at("t"), ElementsAre(DoubleEq(2.5), DoubleEq(7)));
  }
  // A NaN in any sample leaves the tensor out.
  auto with_nan = CollectChannelRanges(
      **exec, {Sample({1, 0, 0, 1}), Sample({std::nanf(""), 0, 0, 1})},
      {{"t", 2}}, nullptr, nullptr, nullptr);
  ASSERT_TRUE(with_nan.ok()) << with_nan.status();
  EXPECT_THAT(*with_nan, IsEmpty());
}

// x [1, 4, 4, 4] -> Conv 1x1 diag(8, 1, 0.1, 0.02) -> Relu -> t -> Conv 1x1
// (4 -> 1, weights 1/8, 1, 10, 50: every channel contributes alike) -> y.
// (Without the Relu, linear collapsing would make the two layers one.)
// Per tensor, t's grid is set by channel 0, so the last channels get about
// one step; equalized, they get many.
std::vector<float> UnbalancedWeights() {
  std::vector<float> w(16, 0.0f);
  const float d[4] = {8, 1, 0.1f, 0.02f};
  for (int c = 0; c < 4; ++c) w[c * 4 + c] = d[c];
  return w;
}

Model UnbalancedModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 4, 4, 4});
  b.FloatInitializer("w1", UnbalancedWeights(), {4, 4, 1, 1});
  b.FloatInitializer("w2", {0.125f, 1, 10, 50}, {1, 4, 1, 1});
  b.AddNode("Conv", {"x", "w1"}, {"c"}, "conv1");
  b.AddNode("Relu", {"c"}, {"t"}, "relu");
  b.AddNode("Conv", {"t", "w2"}, {"y"}, "conv2");
  b.Output("y", DType::kFloat);
  return Import(b);
}

std::vector<Tensor> UniformInputs(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) {
    std::vector<float> v(64);
    for (float& f : v) f = u(rng);
    out.push_back(Tensor::FromVector<float>(v, {1, 4, 4, 4}));
  }
  return out;
}

class DataChannelEqualizationJobTest : public testing::BuiltinTpcJobTest {
 protected:
  // SQNR of the job's QDQ model against the original float model on
  // held-out inputs, both run by the executor.
  static v1::QuantizeRequest Request() {
    v1::QuantizeRequest r;
    r.set_onnx_model(*ExportOnnx(UnbalancedModel()));
    for (const Tensor& t : UniformInputs(16, 1)) {
      *r.add_calibration_samples()->add_inputs() = TensorToSampleProto(t, "x");
    }
    r.mutable_tpc()->set_name("imx500@4.1");
    return r;
  }

  double HeldOutSqnr(bool equalize) {
    v1::QuantizeRequest r = Request();
    r.mutable_quantization()->set_data_channel_equalization(equalize);
    auto result = Run(r);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return 0;
    if (equalize) {
      const auto report = nlohmann::json::parse(result->report_json());
      EXPECT_THAT(report["warnings"].dump(),
                  HasSubstr("1 of 1 convolution input(s) channel-equalized"));
    }
    return QdqSqnr(*result, UniformInputs(16, 2));
  }

  // SQNR of the result's QDQ model against the original float model on
  // `inputs`, both run by the executor: the job's own figures not involved.
  static double QdqSqnr(const v1::QuantizeResult& result,
                        const std::vector<Tensor>& inputs) {
    const Model original = UnbalancedModel();
    auto qdq = ImportOnnx(result.qdq_onnx());
    EXPECT_TRUE(qdq.ok()) << qdq.status();
    if (!qdq.ok()) return 0;
    double signal = 0, noise = 0;
    for (const Tensor& x : inputs) {
      const std::vector<float> f = dce_test::Run(original, x);
      const std::vector<float> q = dce_test::Run(*qdq, x);
      for (size_t i = 0; i < f.size(); ++i) {
        signal += double{f[i]} * f[i];
        noise += (double{f[i]} - q[i]) * (double{f[i]} - q[i]);
      }
    }
    return 10 * std::log10(signal / noise);
  }
};

TEST_F(DataChannelEqualizationJobTest, HeldOutOutputGetsCloserToFloat) {
  const double plain = HeldOutSqnr(false);
  const double equalized = HeldOutSqnr(true);
  // Channel 3 spans 0.02 of channel 0's 8 and weighs as much in y: plain,
  // it sits within a step or two of t's 8-bit grid (7.6 dB measured);
  // equalized (alpha 0.5: s = 1, 2.8, 8.9, 16) it gets 16x the steps
  // (34.5 dB).
  EXPECT_GT(equalized, 30);
  EXPECT_GT(equalized, plain + 20)
      << "plain " << plain << " dB, equalized " << equalized << " dB";
}

// Cancels the job when the channel-ranges pass reports its first sample.
class CancelAtChannelRanges : public ProgressSink {
 public:
  explicit CancelAtChannelRanges(CancellationToken* token) : token_(token) {}
  void Report(const Progress& p) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (p.message.rfind("channel ranges: ", 0) == 0 && !cancelled_) {
      cancelled_ = true;
      token_->Cancel();
    }
  }
  bool cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  CancellationToken* token_;
  bool cancelled_ = false;
};

TEST_F(DataChannelEqualizationJobTest, CancellationStopsTheChannelRangesPass) {
  v1::QuantizeRequest r = Request();
  r.mutable_quantization()->set_data_channel_equalization(true);
  CancellationToken cancel;
  CancelAtChannelRanges sink(&cancel);
  ThreadPool pool(2);
  auto result = Run(r, {.pool = &pool, .sink = &sink, .cancel = &cancel});
  EXPECT_TRUE(sink.cancelled());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
}

// The conv input t can only be 8-bit on imx500@4.1 (a Conv takes no 16-bit
// input), so no upgrade reaches 30 dB; the search then tries the
// equalized graph, which reaches it (34.5 dB above), and says so.
TEST_F(DataChannelEqualizationJobTest, QualityTargetTriesItWhenOutOfReach) {
  v1::QuantizeRequest r = Request();
  r.mutable_quality_target()->set_value(30);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const auto report = nlohmann::json::parse(result->report_json());
  const auto& target = report["quality_target"];
  EXPECT_TRUE(target["met"].get<bool>()) << target.dump();
  EXPECT_LT(target["baseline"].get<double>(), 10) << target.dump();
  EXPECT_GE(target["reached"].get<double>(), 30) << target.dump();
  // The exported model holds it too: on the calibration inputs the target
  // was searched on, and on held-out ones.
  EXPECT_GE(QdqSqnr(*result, UniformInputs(16, 1)), 30);
  EXPECT_GE(QdqSqnr(*result, UniformInputs(16, 2)), 30);
  ASSERT_GE(target["changes"].size(), 1u);
  EXPECT_EQ(target["changes"][0]["what"], "data_channel_equalization");
  EXPECT_THAT(target["steps"].dump(),
              HasSubstr("data_channel_equalization: true, searched again"));
  // Set explicitly to false, the option is not tried: out of reach.
  r.mutable_quantization()->set_data_channel_equalization(false);
  auto refused = Run(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
}

// A target the plain search meets costs no second search.
TEST_F(DataChannelEqualizationJobTest, QualityTargetMetWithoutItIsNotRetried) {
  v1::QuantizeRequest r = Request();
  r.mutable_quality_target()->set_value(5);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const auto report = nlohmann::json::parse(result->report_json());
  EXPECT_TRUE(report["quality_target"]["met"].get<bool>());
  EXPECT_THAT(report["quality_target"].dump(),
              ::testing::Not(HasSubstr("data_channel_equalization")));
}

}  // namespace dce_test
}  // namespace
}  // namespace quantd
