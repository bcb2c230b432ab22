// core/hessian: per-element HMSE scores against closed forms, MCT's
// normalisation, determinism across thread counts, cancellation between
// rounds and the node an unsupported op names.
//
// For y = W x (Gemm, transB) and the Rademacher seed v, d(v . y)/dW = v x^T:
// every element's square is x_j^2 whatever v, so each sample's Hutchinson
// estimate is exactly x_j^2 at every iteration, and MCT's HMSE score is
// sqrt(mean over samples of x_j^2).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/hessian/hutchinson.h"
#include "core/hessian/weights_hessian.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/autodiff/fd_check.h"
#include "tests/core/executor/test_util.h"

namespace quantd::hessian {
namespace {

using autodiff::testing::RandomTensor;
using quantd::testing::Int;
using quantd::testing::Ints;
using quantd::testing::ModelBuilder;
using ::testing::HasSubstr;

using Feeds = std::map<std::string, Tensor>;

// y = x W^T + b, W [3, 4].
Model Linear() {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({3, 4}, 1))
      .Initializer("b", RandomTensor({3}, 2))
      .Add("Gemm", {"x", "w", "b"}, {"y"}, {{"transB", Int(1)}})
      .Output("y");
  return b.Build();
}

Feeds Row(std::vector<float> x) {
  return {{"x", Tensor::FromVector<float>(x, {1, 4})}};
}

TEST(HmseScoresTest, LinearLayerScoreIsTheRootMeanSquareOfItsInput) {
  const std::vector<Feeds> samples = {Row({1, 2, 3, 4}), Row({0, 1, -1, 2})};
  auto scores = ComputeHmseScores(Linear(), {"w"}, samples, {});
  ASSERT_TRUE(scores.ok()) << scores.status();
  ASSERT_EQ(scores->count("w"), 1u);
  const std::vector<float>& s = scores->at("w");
  ASSERT_EQ(s.size(), 12u);
  // sqrt((x1_j^2 + x2_j^2) / 2) per column j, the same for every row.
  const double expected[4] = {std::sqrt(0.5), std::sqrt(2.5), std::sqrt(5.0),
                              std::sqrt(10.0)};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_FLOAT_EQ(s[i * 4 + j], expected[j]) << i << "," << j;
    }
  }
}

TEST(HmseScoresTest, OneSampleEstimateIsTheSquaredJacobianColumn) {
  // MatMul y = x W, W [4, 2]: d(v . y)/dW[j][i] = x_j v_i.
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({4, 2}, 3))
      .Add("MatMul", {"x", "w"}, {"y"})
      .Output("y");
  auto graph = autodiff::GradientGraph::Create(
      std::make_shared<const Model>(b.Build()), {{"w"}, {}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto h = EstimateForSample(**graph, Row({2, -3, 0.5f, 1}), {{"w", 0}}, {},
                             /*seed=*/7);
  ASSERT_TRUE(h.ok()) << h.status();
  const double x2[4] = {4, 9, 0.25, 1};
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ((*h)[0][j * 2 + i], x2[j]);
  }
}

TEST(HmseScoresTest, NormalisationIsMctsRootOfTheSampleMean) {
  // MCT: np.sqrt(np.mean(hessians[:n], axis=0)) on the per-sample sums.
  EXPECT_THAT(NormalizeHmseScores({8.0, 2.0, 0.0, 0.5}, 2),
              ::testing::ElementsAre(2.0f, 1.0f, 0.0f, 0.5f));
}

TEST(HmseScoresTest, OnlyTheFirstSixteenSamplesCount) {
  // 17 samples, the last one far larger: MCT's NUM_QPARAM_HESSIAN_SAMPLES.
  std::vector<Feeds> samples(16, Row({1, 1, 1, 1}));
  samples.push_back(Row({100, 100, 100, 100}));
  auto scores = ComputeHmseScores(Linear(), {"w"}, samples, {});
  ASSERT_TRUE(scores.ok()) << scores.status();
  for (float v : scores->at("w")) EXPECT_FLOAT_EQ(v, 1.0f);
}

// x -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm: the scores
// depend on v, so they exercise the random streams.
Model SmallCnn() {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({4, 3, 3, 3}, 10, 0.5f))
      .Initializer("fc", RandomTensor({5, 4}, 11))
      .Add("Conv", {"x", "w"}, {"c"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Add("Relu", {"c"}, {"r"})
      .Add("GlobalAveragePool", {"r"}, {"p"})
      .Add("Flatten", {"p"}, {"f"})
      .Add("Gemm", {"f", "fc"}, {"y"}, {{"transB", Int(1)}})
      .Output("y");
  return b.Build();
}

std::vector<Feeds> Images(int n) {
  std::vector<Feeds> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({{"x", RandomTensor({1, 3, 6, 6}, 100 + i)}});
  }
  return out;
}

TEST(HmseScoresTest, ThreadCountDoesNotChangeTheScores) {
  const std::vector<Feeds> samples = Images(6);
  auto inline_scores = ComputeHmseScores(SmallCnn(), {"w", "fc"}, samples, {});
  ThreadPool pool(3);
  WeightsHessianOptions o;
  o.pool = &pool;
  auto pooled = ComputeHmseScores(SmallCnn(), {"w", "fc"}, samples, o);
  ASSERT_TRUE(inline_scores.ok()) << inline_scores.status();
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  EXPECT_EQ(*inline_scores, *pooled);
  double total = 0;
  for (float v : inline_scores->at("w")) total += v;
  EXPECT_GT(total, 0);
}

// Cancels the token when the first round of samples reports.
class CancelAfterFirstRound : public ProgressSink {
 public:
  explicit CancelAfterFirstRound(CancellationToken* token) : token_(token) {}
  void Report(const Progress& p) override {
    ++reports;
    token_->Cancel();
  }
  int reports = 0;

 private:
  CancellationToken* token_;
};

TEST(HmseScoresTest, CancellationStopsTheSampleRounds) {
  CancellationToken cancel;
  CancelAfterFirstRound sink(&cancel);
  WeightsHessianOptions o;
  o.cancel = &cancel;
  o.progress = &sink;
  auto scores = ComputeHmseScores(SmallCnn(), {"w"}, Images(12), o);
  EXPECT_EQ(scores.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(sink.reports, 1);  // rounds 2 and 3 never ran
}

TEST(HmseScoresTest, CancelledTokenStopsTheIterations) {
  CancellationToken cancel;
  cancel.Cancel();
  auto graph = autodiff::GradientGraph::Create(
      std::make_shared<const Model>(Linear()), {{"w"}, {}});
  ASSERT_TRUE(graph.ok());
  auto h =
      EstimateForSample(**graph, Row({1, 2, 3, 4}), {{"w", 0}}, {}, 1, &cancel);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kCancelled);
}

TEST(HmseScoresTest, OpWithoutBackwardPassNamesTheNode) {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({3, 4}, 1))
      .Add("Gemm", {"x", "w"}, {"g"}, {{"transB", Int(1)}})
      .Add("Erf", {"g"}, {"y"})
      .Output("y");
  auto scores = ComputeHmseScores(b.Build(), {"w"}, {Row({1, 2, 3, 4})}, {});
  EXPECT_EQ(scores.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(scores.status().message(), HasSubstr("node 'Erf_1' (Erf)"));
}

}  // namespace
}  // namespace quantd::hessian
