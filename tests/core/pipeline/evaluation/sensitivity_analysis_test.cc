// Per-layer sensitivity analysis on a hand-built x -> MatMul(W1) -> Relu ->
// MatMul(W2) -> y, with a hand-written plan: W1 off its grid, the Relu's
// output on a 1/16 grid, W2 exactly on its grid. The oracle computes each
// "only this node quantized" / "only this node float" output by hand.
#include "core/pipeline/evaluation/sensitivity_analysis.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/runtime/thread_pool.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/evaluation/hand_qdq_weight.h"
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

QdqPlan Plan() {
  QdqPlan plan;
  plan.weights.push_back(testing::HandQdqWeight("mm1", kW1, {4, 3}, kW1Scale));
  plan.weights.push_back(testing::HandQdqWeight("mm2", kW2, {3, 2}, kW2Scale));
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
  plan.weights.push_back(testing::HandQdqWeight("mm2", kW2, {3, 2}, kW2Scale));
  auto r = AnalyzeLayerSensitivity(fb, qb, plan, Samples(),
                                   SensitivityAnalysisOptions(), nullptr,
                                   nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].node, "mm2");
  EXPECT_EQ((*r)[0].sqnr_only_quantized_db,
            std::numeric_limits<double>::infinity());
}

// The oracle of the figures below: the whole model run through the
// executor with only `sub`'s Q/DQ (its weights fake-quantized, its
// activations and graph inputs fake-quantized as the report's fake-quant
// run does), against the float model, over every sample and output.
double FullRunSqnr(const Model& m, const QdqPlan& sub) {
  auto fq_model = WithFakeQuantWeights(m, sub);
  EXPECT_TRUE(fq_model.ok()) << fq_model.status();
  auto float_exec = Executor::Create(m);
  auto fq_exec = Executor::Create(*fq_model);
  EXPECT_TRUE(float_exec.ok() && fq_exec.ok());
  const ActivationFakeQuantizer quantizer(sub);
  RunOptions fq;
  fq.rewriter = &quantizer.rewriter();
  double signal = 0, noise = 0;
  for (const SampleFeeds& sample : Samples()) {
    auto f = (*float_exec)->Run(sample);
    auto q = (*fq_exec)->Run(quantizer.FakeQuantizeFeeds(sample), fq);
    EXPECT_TRUE(f.ok() && q.ok());
    for (const auto& out : m.graph.outputs) {
      auto a = f->at(out.name).span<float>();
      auto b = q->at(out.name).span<float>();
      for (size_t i = 0; i < a.size(); ++i) {
        signal += static_cast<double>(a[i]) * a[i];
        noise += (static_cast<double>(a[i]) - b[i]) * (a[i] - b[i]);
      }
    }
  }
  return 10 * std::log10(signal / noise);
}

// The part of `plan` that is node `node`'s (keep = true) or every other
// node's (keep = false): its weights and the activations it produces.
QdqPlan PartOf(const Model& m, const QdqPlan& plan, const std::string& node,
               bool keep) {
  std::set<std::string> outputs;
  for (const Node& n : m.graph.nodes) {
    if (n.name == node) outputs.insert(n.outputs.begin(), n.outputs.end());
  }
  QdqPlan part;
  for (const QdqWeight& w : plan.weights) {
    if ((w.node == node) == keep) part.weights.push_back(w);
  }
  for (const QdqActivation& a : plan.activations) {
    if ((outputs.count(a.tensor) > 0) == keep) part.activations.push_back(a);
  }
  return part;
}

// x -> MatMul(W1 exact on its 1/4 grid) -> h on a fine 1/64 grid -> Relu ->
// r on a coarse 1/2 grid -> MatMul(W2) -> y: leaving h float moves it by at
// most 1/128, which r's grid mostly rounds away (the analysis's runs stop
// there), and where it does not, the change reaches y.
QdqPlan AbsorbingPlan() {
  QdqPlan plan;
  const std::vector<float> w1 = OnGrid(kW1, kW1Scale);
  plan.weights.push_back(testing::HandQdqWeight("mm1", w1, {4, 3}, kW1Scale));
  QdqActivation h;
  h.tensor = "h";
  h.storage = {DType::kInt8, -128, 127};
  h.scale = 1.0f / 64;
  plan.activations.push_back(h);
  QdqActivation r;
  r.tensor = "r";
  r.storage = {DType::kUint8, 0, 255};
  r.scale = 0.5f;
  plan.activations.push_back(r);
  return plan;
}

Model AbsorbingModel() {
  Model m = TwoLayerModel();
  m.graph.initializers["w1"] =
      Tensor::FromVector<float>(OnGrid(kW1, kW1Scale), {4, 3});
  return m;
}

void ExpectSqnr(double got, double oracle, const std::string& node) {
  if (std::isinf(oracle)) {
    EXPECT_EQ(got, oracle) << node;
  } else {
    EXPECT_NEAR(got, oracle, 1e-9) << node;
  }
}

void ExpectFiguresOfFullRuns(const Model& m, const QdqPlan& plan) {
  auto r = AnalyzeLayerSensitivity(m, m, plan, Samples(),
                                   SensitivityAnalysisOptions(), nullptr,
                                   nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->empty());
  for (const LayerSensitivity& s : *r) {
    ExpectSqnr(s.sqnr_only_quantized_db,
               FullRunSqnr(m, PartOf(m, plan, s.node, true)), s.node);
    ExpectSqnr(s.sqnr_only_float_db,
               FullRunSqnr(m, PartOf(m, plan, s.node, false)), s.node);
  }
}

TEST(SensitivityAnalysis, FiguresAreThoseOfFullRunsWithOnlyThatPartOfThePlan) {
  ExpectFiguresOfFullRuns(TwoLayerModel(), Plan());
}

// Runs that stop where a quantizer absorbs the change give the figures of
// the full runs too.
TEST(SensitivityAnalysis, AnAbsorbedChangeGivesTheFullRunsFigures) {
  const Model m = AbsorbingModel();
  // The case arises: on some sample, r is the same bytes with mm1 float.
  int absorbed = 0;
  for (const SampleFeeds& sample : Samples()) {
    std::vector<Tensor> r;
    for (bool keep : {true, false}) {
      const QdqPlan part = PartOf(m, AbsorbingPlan(), "mm1", keep);
      const QdqPlan& plan = keep ? AbsorbingPlan() : part;
      const ActivationFakeQuantizer quantizer(plan);
      auto exec = Executor::Create(*WithFakeQuantWeights(m, plan));
      ASSERT_TRUE(exec.ok());
      RunOptions options;
      options.rewriter = &quantizer.rewriter();
      options.extra_outputs = {"r"};
      auto out = (*exec)->Run(sample, options);
      ASSERT_TRUE(out.ok()) << out.status();
      r.push_back(out->at("r"));
    }
    absorbed += std::memcmp(r[0].raw(), r[1].raw(), r[0].byte_size()) == 0;
  }
  EXPECT_GT(absorbed, 0);
  ExpectFiguresOfFullRuns(m, AbsorbingPlan());
}

TEST(SensitivityAnalysis, FiguresAreTheSameOnAnyThreadCount) {
  const Model m = AbsorbingModel();
  std::vector<std::vector<LayerSensitivity>> runs;
  for (int threads : {0, 1, 3}) {
    ThreadPool pool(threads);
    auto r = AnalyzeLayerSensitivity(m, m, AbsorbingPlan(), Samples(),
                                     SensitivityAnalysisOptions(), &pool,
                                     nullptr, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    runs.push_back(*r);
  }
  for (size_t k = 1; k < runs.size(); ++k) {
    ASSERT_EQ(runs[k].size(), runs[0].size());
    for (size_t u = 0; u < runs[0].size(); ++u) {
      EXPECT_EQ(runs[k][u].node, runs[0][u].node);
      EXPECT_EQ(std::memcmp(&runs[k][u].sqnr_only_quantized_db,
                            &runs[0][u].sqnr_only_quantized_db, 8),
                0);
      EXPECT_EQ(std::memcmp(&runs[k][u].sqnr_only_float_db,
                            &runs[0][u].sqnr_only_float_db, 8),
                0);
    }
  }
}

}  // namespace
}  // namespace quantd
