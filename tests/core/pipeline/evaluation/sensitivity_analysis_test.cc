// Per-layer sensitivity analysis on a hand-built x -> MatMul(W1) -> Relu ->
// MatMul(W2) -> y, with a hand-written plan: W1 off its grid, the Relu's
// output on a 1/16 grid, W2 exactly on its grid. The oracle computes each
// "only this node quantized" / "only this node float" output by hand.
#include "core/pipeline/evaluation/sensitivity_analysis.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

const std::vector<float> kW1 = {0.31f,  -0.72f, 0.12f, 0.55f, 0.9f,   -0.23f,
                                -0.41f, 0.08f,  0.67f, 0.2f,  -0.15f, 0.38f};
const std::vector<float> kW2 = {0.5f, -1.0f, 1.5f, 0.5f, -0.5f, 1.0f};
constexpr float kW1Scale = 0.25f;      // W1 -> multiples of 1/4 (inexact)
constexpr float kW2Scale = 0.5f;       // W2 is already on this grid (exact)
constexpr float kReluScale = 0.0625f;  // 1/16, uint8 [0, 255]

Model TwoLayerModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {2, 4});
  b.Initializer("w1", Tensor::FromVector<float>(kW1, {4, 3}));
  b.Initializer("w2", Tensor::FromVector<float>(kW2, {3, 2}));
  b.AddNode("MatMul", {"x", "w1"}, {"h"}, "mm1");
  b.AddNode("Relu", {"h"}, {"r"}, "relu");
  b.AddNode("MatMul", {"r", "w2"}, {"y"}, "mm2");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

std::vector<float> OnGrid(const std::vector<float>& w, float scale) {
  std::vector<float> q;
  for (float v : w) q.push_back(std::nearbyint(v / scale) * scale);
  return q;
}

QdqWeight Weight(const std::string& node, const std::vector<float>& w,
                 std::vector<int64_t> shape, float scale) {
  QdqWeight q;
  q.node = node;
  q.input_index = 1;
  q.storage = {DType::kInt8, -127, 127};
  q.scales = {scale};
  std::vector<int32_t> ints;
  for (float v : w)
    ints.push_back(static_cast<int32_t>(std::nearbyint(v / scale)));
  q.int_values = Tensor::FromVector<int32_t>(ints, std::move(shape));
  return q;
}

QdqPlan Plan() {
  QdqPlan plan;
  plan.weights.push_back(Weight("mm1", kW1, {4, 3}, kW1Scale));
  plan.weights.push_back(Weight("mm2", kW2, {3, 2}, kW2Scale));
  QdqActivation r;
  r.tensor = "r";
  r.storage = {DType::kUint8, 0, 255};
  r.scale = kReluScale;
  plan.activations.push_back(r);
  return plan;
}

std::vector<SampleFeeds> Samples() {
  const std::vector<std::vector<float>> xs = {
      {1.0f, -0.5f, 2.0f, 0.3f, -1.2f, 0.7f, 0.4f, 1.9f},
      {0.2f, 1.1f, -0.8f, 1.5f, 2.2f, -0.3f, 0.9f, -1.4f}};
  std::vector<SampleFeeds> samples;
  for (const auto& x : xs) {
    samples.push_back({{"x", Tensor::FromVector<float>(x, {2, 4})}});
  }
  return samples;
}

// y = fq?(relu(x W1)) W2 for one sample, by hand.
std::vector<float> Forward(const std::vector<float>& x,
                           const std::vector<float>& w1, bool quantize_relu,
                           const std::vector<float>& w2) {
  std::vector<float> y(4, 0.0f);
  for (int row = 0; row < 2; ++row) {
    for (int o = 0; o < 2; ++o) {
      float acc = 0;
      for (int j = 0; j < 3; ++j) {
        float h = 0;
        for (int k = 0; k < 4; ++k) h += x[row * 4 + k] * w1[k * 3 + j];
        float r = std::max(0.0f, h);
        if (quantize_relu) {
          r = std::min(255.0f, std::nearbyint(r / kReluScale)) * kReluScale;
        }
        acc += r * w2[j * 2 + o];
      }
      y[row * 2 + o] = acc;
    }
  }
  return y;
}

// Output SQNR over the samples of Forward(w1, quantize_relu, w2) vs float.
double HandSqnr(const std::vector<float>& w1, bool quantize_relu,
                const std::vector<float>& w2) {
  double signal = 0, noise = 0;
  for (const SampleFeeds& s : Samples()) {
    auto xs = s.at("x").span<float>();
    std::vector<float> x(xs.begin(), xs.end());
    const auto f = Forward(x, kW1, false, kW2);
    const auto q = Forward(x, w1, quantize_relu, w2);
    for (size_t i = 0; i < f.size(); ++i) {
      signal += static_cast<double>(f[i]) * f[i];
      noise += (static_cast<double>(f[i]) - q[i]) * (f[i] - q[i]);
    }
  }
  return 10 * std::log10(signal / noise);
}

std::map<std::string, LayerSensitivity> Analyze(
    const CancellationToken* cancel = nullptr, int chunk_samples = 8) {
  const Model m = TwoLayerModel();
  SensitivityAnalysisOptions options;
  options.chunk_samples = chunk_samples;
  auto r = AnalyzeLayerSensitivity(m, m, Plan(), Samples(), options, nullptr,
                                   cancel, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  std::map<std::string, LayerSensitivity> by_node;
  if (r.ok()) {
    for (const auto& s : *r) by_node[s.node] = s;
  }
  return by_node;
}

TEST(SensitivityAnalysis, OnlyQuantizedIsTheSqnrWithOnlyThatLayersQdq) {
  const auto s = Analyze();
  ASSERT_EQ(s.size(), 3u);  // mm1 (weights), relu (output), mm2 (weights)
  const std::vector<float> w1q = OnGrid(kW1, kW1Scale);
  EXPECT_NEAR(s.at("mm1").sqnr_only_quantized_db, HandSqnr(w1q, false, kW2),
              1e-3);
  EXPECT_NEAR(s.at("relu").sqnr_only_quantized_db, HandSqnr(kW1, true, kW2),
              1e-3);
}

TEST(SensitivityAnalysis, OnlyFloatIsTheSqnrWithEveryOtherLayersQdq) {
  const auto s = Analyze();
  const std::vector<float> w1q = OnGrid(kW1, kW1Scale);
  const std::vector<float> w2q = OnGrid(kW2, kW2Scale);
  EXPECT_NEAR(s.at("mm1").sqnr_only_float_db, HandSqnr(kW1, true, w2q), 1e-3);
  EXPECT_NEAR(s.at("relu").sqnr_only_float_db, HandSqnr(w1q, false, w2q), 1e-3);
  EXPECT_NEAR(s.at("mm2").sqnr_only_float_db, HandSqnr(w1q, true, kW2), 1e-3);
}

// The caches' chunk (sized to the memory budget) changes what is held at
// once, never a figure: every node's sums still merge in sample order.
TEST(SensitivityAnalysis, ChunkSizeDoesNotChangeAFigure) {
  const auto whole = Analyze(nullptr, 8);
  for (int chunk : {1, 2, 3}) {
    const auto chunked = Analyze(nullptr, chunk);
    ASSERT_EQ(chunked.size(), whole.size());
    for (const auto& [node, s] : whole) {
      EXPECT_EQ(chunked.at(node).sqnr_only_quantized_db,
                s.sqnr_only_quantized_db)
          << node << " chunk " << chunk;
      EXPECT_EQ(chunked.at(node).sqnr_only_float_db, s.sqnr_only_float_db)
          << node << " chunk " << chunk;
    }
  }
}

// Two caches of every activation per sample within 256 MiB, 1 to 8 samples.
TEST(SensitivityAnalysis, ChunksFitTheCacheBudget) {
  EXPECT_EQ(AnalysisChunkSamples(0), 8);                   // unknown
  EXPECT_EQ(AnalysisChunkSamples(int64_t{1} << 20), 8);    // 2 MiB x 8 fits
  EXPECT_EQ(AnalysisChunkSamples(int64_t{32} << 20), 4);   // 256 / 64
  EXPECT_EQ(AnalysisChunkSamples(int64_t{192} << 20), 1);  // ppocr_rec
}

TEST(SensitivityAnalysis, ALayerQuantizedExactlyHasInfiniteSqnr) {
  const auto s = Analyze();
  EXPECT_EQ(s.at("mm2").sqnr_only_quantized_db,
            std::numeric_limits<double>::infinity());
}

TEST(SensitivityAnalysis, ACancelledTokenStopsTheAnalysis) {
  CancellationToken cancel;
  cancel.Cancel(absl::CancelledError("client went away"));
  const Model m = TwoLayerModel();
  auto r = AnalyzeLayerSensitivity(m, m, Plan(), Samples(),
                                   SensitivityAnalysisOptions(), nullptr,
                                   &cancel, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
}

// A constant the job corrected (bias correction's private bias) is part of
// its node's quantization: with only another node quantized it is not in
// effect (here that node's weights are exact, so the output is float).
TEST(SensitivityAnalysis, ACorrectedBiasBelongsToItsNode) {
  // MatMul takes no bias: the bias is an Add after mm1, whose constant the
  // job replaced.
  Model fb = TwoLayerModel();
  fb.graph.initializers["b"] = Tensor::FromVector<float>({0, 0, 0}, {3});
  fb.graph.nodes[0].outputs = {"h0"};
  Node add;
  add.name = "add";
  add.op_type = "Add";
  add.inputs = {"h0", "b"};
  add.outputs = {"h"};
  fb.graph.nodes.insert(fb.graph.nodes.begin() + 1, add);
  Model qb = fb;
  qb.graph.nodes[1].inputs = {"h0", "mm1_bias_corrected"};
  qb.graph.initializers["mm1_bias_corrected"] =
      Tensor::FromVector<float>({0.5f, -0.25f, 0.125f}, {3});
  QdqPlan plan;
  plan.weights.push_back(Weight("mm2", kW2, {3, 2}, kW2Scale));
  auto r = AnalyzeLayerSensitivity(fb, qb, plan, Samples(),
                                   SensitivityAnalysisOptions(), nullptr,
                                   nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].node, "mm2");
  EXPECT_EQ((*r)[0].sqnr_only_quantized_db,
            std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace quantd
