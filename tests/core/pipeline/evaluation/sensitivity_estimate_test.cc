// The first-order estimate of the per-layer sensitivity on a hand-built
// x -> MatMul(W1) -> h (quantized on a 1/16 grid) -> MatMul(W2) -> y with a
// single output element: the model is linear in every node's change and a
// probe v = +-1 gives (v J d)^2 = (J d)^2, so the estimate must equal the
// exact analysis (the cone runs, themselves checked by hand in
// sensitivity_analysis_test.cc). Also: the same bytes on any thread count,
// no only-float figure, and UNIMPLEMENTED naming the node for an op
// without a backward pass.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/runtime/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/evaluation/hand_qdq_weight.h"
#include "tests/data/onnx/model_builder.h"

// Its own namespace: the unity build shares a file with
// sensitivity_analysis_test.cc.
namespace quantd::sensitivity_estimate_test {
namespace {

const std::vector<float> kW1 = {0.31f,  -0.72f, 0.12f, 0.55f, 0.9f,   -0.23f,
                                -0.41f, 0.08f,  0.67f, 0.2f,  -0.15f, 0.38f};
const std::vector<float> kW2 = {0.45f, -1.1f, 1.3f};

// x[1,4] -> (first op) -> MatMul(w1[4,3]) -> h -> MatMul(w2[3,1]) -> y.
Model LinearModel(const std::string& first_op = "") {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 4});
  b.Initializer("w1", Tensor::FromVector<float>(kW1, {4, 3}));
  b.Initializer("w2", Tensor::FromVector<float>(kW2, {3, 1}));
  std::string in = "x";
  if (!first_op.empty()) {
    b.AddNode(first_op, {"x"}, {"x2"}, "first");
    in = "x2";
  }
  b.AddNode("MatMul", {in, "w1"}, {"h"}, "mm1");
  b.AddNode("MatMul", {"h", "w2"}, {"y"}, "mm2");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

QdqPlan Plan() {
  QdqPlan plan;
  plan.weights.push_back(testing::HandQdqWeight("mm1", kW1, {4, 3}, 0.25f));
  plan.weights.push_back(testing::HandQdqWeight("mm2", kW2, {3, 1}, 0.125f));
  QdqActivation h;
  h.tensor = "h";
  h.storage = {DType::kInt8, -128, 127};
  h.scale = 0.0625f;
  plan.activations.push_back(h);
  return plan;
}

std::vector<SampleFeeds> Samples() {
  const std::vector<std::vector<float>> xs = {{1.0f, -0.5f, 2.0f, 0.3f},
                                              {-1.2f, 0.7f, 0.4f, 1.9f},
                                              {0.2f, 1.1f, -0.8f, 1.5f}};
  std::vector<SampleFeeds> samples;
  for (const auto& x : xs) {
    samples.push_back({{"x", Tensor::FromVector<float>(x, {1, 4})}});
  }
  return samples;
}

std::map<std::string, LayerSensitivity> ByNode(
    const std::vector<LayerSensitivity>& rows) {
  std::map<std::string, LayerSensitivity> out;
  for (const auto& r : rows) out[r.node] = r;
  return out;
}

TEST(SensitivityEstimate, EqualsTheExactFiguresOnALinearScalarModel) {
  const Model m = LinearModel();
  auto exact = AnalyzeLayerSensitivity(m, m, Plan(), Samples(), {}, nullptr,
                                       nullptr, nullptr);
  ASSERT_TRUE(exact.ok()) << exact.status();
  for (int probes : {1, 3}) {
    auto estimate = EstimateLayerSensitivity(m, m, Plan(), Samples(), {},
                                             probes, nullptr, nullptr, nullptr);
    ASSERT_TRUE(estimate.ok()) << estimate.status();
    auto e = ByNode(*exact);
    auto s = ByNode(*estimate);
    ASSERT_EQ(s.size(), 2u);
    for (const char* node : {"mm1", "mm2"}) {
      SCOPED_TRACE(node);
      EXPECT_TRUE(s[node].estimated);
      EXPECT_FALSE(e[node].estimated);
      ASSERT_TRUE(std::isfinite(e[node].sqnr_only_quantized_db));
      // Float sums in different orders: agreement to float precision.
      EXPECT_NEAR(s[node].sqnr_only_quantized_db,
                  e[node].sqnr_only_quantized_db, 1e-3);
      EXPECT_TRUE(std::isnan(s[node].sqnr_only_float_db));
    }
  }
}

TEST(SensitivityEstimate, SameBytesOnAnyThreadCount) {
  const Model m = LinearModel();
  auto serial = EstimateLayerSensitivity(m, m, Plan(), Samples(), {}, 4,
                                         nullptr, nullptr, nullptr);
  ASSERT_TRUE(serial.ok()) << serial.status();
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    SensitivityAnalysisOptions chunks;
    chunks.chunk_samples = 2;
    auto parallel = EstimateLayerSensitivity(m, m, Plan(), Samples(), chunks, 4,
                                             &pool, nullptr, nullptr);
    ASSERT_TRUE(parallel.ok()) << parallel.status();
    ASSERT_EQ(parallel->size(), serial->size());
    for (size_t i = 0; i < serial->size(); ++i) {
      EXPECT_EQ((*parallel)[i].node, (*serial)[i].node);
      EXPECT_EQ(
          std::memcmp(&(*parallel)[i].sqnr_only_quantized_db,
                      &(*serial)[i].sqnr_only_quantized_db, sizeof(double)),
          0);
    }
  }
}

TEST(SensitivityEstimate, AnOpWithoutABackwardPassIsUnimplemented) {
  const Model m = LinearModel("Exp");
  auto r = EstimateLayerSensitivity(m, m, Plan(), Samples(), {}, 2, nullptr,
                                    nullptr, nullptr);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("'first' (Exp)"));
}

TEST(SensitivityEstimate, CancellationStopsIt) {
  const Model m = LinearModel();
  CancellationToken cancel;
  cancel.Cancel();
  auto r = EstimateLayerSensitivity(m, m, Plan(), Samples(), {}, 2, nullptr,
                                    &cancel, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
}

}  // namespace
}  // namespace quantd::sensitivity_estimate_test
