// The report's evaluation from float values kept by calibration equals the
// evaluation that runs the float model again (the path it replaces), and
// calibration keeps no more than its byte budget.
#include "core/pipeline/evaluation/evaluation.h"

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/evaluation/paired_models.h"
#include "core/pipeline/evaluation/squared_error_sums.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/ptq/statistics.h"
#include "core/qdq/qdq_math.h"
#include "gtest/gtest.h"
#include "tests/testing/example_model.h"

namespace quantd {
namespace {

class KeptFloatValuesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto exec = Executor::Create(std::make_shared<const Model>(model_), {});
    ASSERT_TRUE(exec.ok()) << exec.status();
    exec_ = *std::move(exec);
    // Every node output on a coarse int8 grid: non-zero noise everywhere.
    for (const Node& n : model_.graph.nodes) {
      tensors_.insert(n.outputs[0]);
      all_outputs_.insert(n.outputs.begin(), n.outputs.end());
      plan_.activations.push_back(
          {n.outputs[0], *StorageForBits(8, true), 0.05f, 0});
    }
  }

  // Bytes of every node output and graph output of one sample.
  int64_t SampleBytes() {
    int64_t bytes = 0;
    TensorObserver count = [&](const Node&, int, const Tensor& v) {
      bytes += static_cast<int64_t>(v.byte_size());
    };
    RunOptions o;
    o.observer = &count;
    auto out = exec_->Run(samples_[0], o);
    EXPECT_TRUE(out.ok());
    for (const auto& [name, t] : *out) bytes += t.byte_size();
    return bytes;
  }

  StatisticsResult Calibrate(int64_t keep_samples, int64_t budget,
                             ThreadPool* pool) {
    StatisticsRequest request;
    request.keep = {all_outputs_, keep_samples, budget};
    auto stats =
        CollectStatistics(*exec_, samples_, request, pool, nullptr, nullptr);
    EXPECT_TRUE(stats.ok()) << stats.status();
    return *std::move(stats);
  }

  EvaluationResult Evaluate(KeptFloatRuns* kept, ThreadPool* pool) {
    ActivationFakeQuantizer quantizer(plan_);
    auto r = EvaluateFakeQuant(*exec_, *exec_, quantizer, samples_, tensors_,
                               pool, nullptr, nullptr, kept);
    EXPECT_TRUE(r.ok()) << r.status();
    return *std::move(r);
  }

  static void ExpectSameFigures(const EvaluationResult& a,
                                const EvaluationResult& b) {
    ASSERT_EQ(a.tensor_sqnr_db.size(), b.tensor_sqnr_db.size());
    for (const auto& [name, db] : a.tensor_sqnr_db) {
      ASSERT_TRUE(b.tensor_sqnr_db.count(name)) << name;
      const double other = b.tensor_sqnr_db.at(name);
      EXPECT_EQ(std::memcmp(&db, &other, sizeof(double)), 0) << name;
    }
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t i = 0; i < a.outputs.size(); ++i) {
      EXPECT_EQ(a.outputs[i].name, b.outputs[i].name);
      EXPECT_EQ(a.outputs[i].sqnr_db, b.outputs[i].sqnr_db);
      EXPECT_EQ(a.outputs[i].cosine, b.outputs[i].cosine);
      EXPECT_EQ(a.outputs[i].top1_agreement, b.outputs[i].top1_agreement);
    }
    EXPECT_EQ(a.output_sqnr_db, b.output_sqnr_db);
  }

  Model model_ = MakeExampleCnn();
  std::vector<SampleFeeds> samples_ = MakeExampleImages(6, 4);
  std::unique_ptr<Executor> exec_;
  std::set<std::string> tensors_, all_outputs_;
  QdqPlan plan_;
};

TEST_F(KeptFloatValuesTest, FiguresFromKeptValuesEqualARecomputation) {
  const EvaluationResult recomputed = Evaluate(nullptr, nullptr);
  ASSERT_FALSE(recomputed.tensor_sqnr_db.empty());
  StatisticsResult stats = Calibrate(6, int64_t{1} << 30, nullptr);
  EXPECT_EQ(stats.kept.num_kept(), 6);
  ExpectSameFigures(Evaluate(&stats.kept, nullptr), recomputed);
  EXPECT_EQ(stats.kept.num_kept(), 0);  // used (and freed) by the report
}

// A budget of 2.5 samples keeps the first two (one thread, in order); the
// other samples are recomputed and the figures do not change.
TEST_F(KeptFloatValuesTest, BudgetBoundsTheKeptSamples) {
  const int64_t per_sample = SampleBytes();
  StatisticsResult stats = Calibrate(6, per_sample * 5 / 2, nullptr);
  ASSERT_EQ(stats.kept.samples.size(), 6u);
  EXPECT_TRUE(stats.kept.samples[0].has_value());
  EXPECT_TRUE(stats.kept.samples[1].has_value());
  EXPECT_EQ(stats.kept.num_kept(), 2);
  ExpectSameFigures(Evaluate(&stats.kept, nullptr), Evaluate(nullptr, nullptr));
}

// Only the first `keep.samples` samples are kept (the report's subset).
TEST_F(KeptFloatValuesTest, KeepsOnlyTheRequestedFirstSamples) {
  StatisticsResult stats = Calibrate(3, int64_t{1} << 30, nullptr);
  EXPECT_EQ(stats.kept.samples.size(), 3u);
  EXPECT_EQ(stats.kept.num_kept(), 3);
}

// Whatever the thread count and whichever samples fit the budget, the
// figures are those of the recomputation.
TEST_F(KeptFloatValuesTest, ThreadCountDoesNotChangeTheFigures) {
  ThreadPool pool(2);
  const EvaluationResult serial = Evaluate(nullptr, nullptr);
  StatisticsResult stats = Calibrate(6, SampleBytes() * 3, &pool);
  EXPECT_LE(stats.kept.num_kept(), 3);
  ExpectSameFigures(Evaluate(&stats.kept, &pool), serial);
}

// The float and fake-quant models as one graph (the report's path for
// samples without kept values): each side's outputs are those of its model
// run alone, bit for bit, and every tensor's float value comes just before
// its fake-quant twin. Oracle: the two executors run apart.
TEST(PairedModelsTest, EachSideComputesWhatItComputesAlone) {
  const Model float_model = MakeExampleCnn();
  Model fq_model = float_model;
  for (auto& [name, t] : fq_model.graph.initializers) {
    Tensor scaled(t.dtype(), t.shape());
    if (t.dtype() != DType::kFloat) continue;
    auto in = t.span<float>();
    auto out = scaled.mutable_span<float>();
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] * 0.75f;
    t = scaled;
  }
  auto f_exec = Executor::Create(float_model, {});
  auto q_exec = Executor::Create(fq_model, {});
  auto paired = PairedModels::Create(float_model, fq_model, {});
  ASSERT_TRUE(f_exec.ok() && q_exec.ok() && paired.ok());
  ASSERT_NE(*paired, nullptr);
  const SampleFeeds sample = MakeExampleImages(1, 9)[0];
  SampleFeeds fq_feeds = sample;
  for (auto& [name, t] : fq_feeds) {
    Tensor shifted(t.dtype(), t.shape());
    auto in = t.span<float>();
    auto out = shifted.mutable_span<float>();
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] + 0.5f;
    t = shifted;
  }
  std::vector<std::string> seen;
  TensorObserver record = [&](const Node& n, int k, const Tensor&) {
    seen.push_back(n.outputs[k]);
  };
  RunOptions o;
  o.observer = &record;
  auto both = (*paired)->executor().Run((*paired)->Feeds(sample, fq_feeds), o);
  auto f_alone = (*f_exec)->Run(sample);
  auto q_alone = (*q_exec)->Run(fq_feeds);
  ASSERT_TRUE(both.ok() && f_alone.ok() && q_alone.ok()) << both.status();
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
  };
  for (const auto& [name, t] : *f_alone) {
    ASSERT_TRUE(both->count(std::string(kFloatPrefix) + name)) << name;
    EXPECT_TRUE(same(both->at(std::string(kFloatPrefix) + name), t)) << name;
    EXPECT_TRUE(same(both->at(name), q_alone->at(name))) << name;
    EXPECT_FALSE(same(t, q_alone->at(name))) << name;  // the sides differ
  }
  // Node by node: "[float] x" just before "x" (the example's nodes have
  // one output each).
  ASSERT_EQ(seen.size(), 2 * float_model.graph.nodes.size());
  for (size_t i = 0; i + 1 < seen.size(); i += 2) {
    absl::string_view original;
    EXPECT_TRUE(PairedModels::FloatSide(seen[i], &original)) << seen[i];
    EXPECT_EQ(original, seen[i + 1]);
  }
}

// Nodes with subgraphs (If bodies read outer names the float side would
// have to rename) and names already carrying the prefix are not paired:
// the report then runs the two models apart.
TEST(PairedModelsTest, SubgraphsAndPrefixedNamesAreNotPaired) {
  const Model plain = MakeExampleCnn();
  Model with_if = plain;
  Attribute body;
  body.type = Attribute::Type::kGraph;
  body.g = std::make_shared<Graph>();
  with_if.graph.nodes[0].attributes["then_branch"] = body;
  auto a = PairedModels::Create(with_if, plain, {});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, nullptr);
  Model prefixed = plain;
  prefixed.graph.nodes[0].name = std::string(kFloatPrefix) + "conv";
  auto b = PairedModels::Create(plain, prefixed, {});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, nullptr);
  auto c = PairedModels::Create(plain, plain, {});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*c, nullptr);
}

// The report's streamed four-lane sums against the one-tensor loop, and
// both against sums written out here in element order: equal bit for bit,
// for pairs of many lengths (not multiples of four, shorter than four,
// empty) in any order, with one pair that is not comparable (zero sums).
// At most four pairs are held at once.
TEST(SquaredErrorSumsTest, StreamedLanesEqualOneTensorAtATimeBitForBit) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  auto make = [&](int64_t n) {
    Tensor t(DType::kFloat, {n});
    for (float& v : t.mutable_span<float>()) v = normal(rng);
    return t;
  };
  const std::vector<std::vector<int64_t>> orders = {
      {1000, 1000, 1000, 1000},
      {1001, 37, 4, 1003, 0, 9, 9, 9, 5, 6, 7, 8, 3, 4096, 12, 2},
      {7},
      {64, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 513}};
  for (const std::vector<int64_t>& lengths : orders) {
    std::vector<Tensor> f, q;
    for (int64_t n : lengths) {
      f.push_back(make(n));
      q.push_back(make(n));
    }
    std::map<std::string, SquaredErrorSums> streamed;
    SquaredErrorLanes lanes(
        [&](const std::string& name, const SquaredErrorSums& s) {
          EXPECT_TRUE(streamed.emplace(name, s).second) << name;
        });
    for (size_t j = 0; j < lengths.size(); ++j) {
      lanes.Add(absl::StrCat(j), f[j], q[j]);
      // Held: the pairs added and not yet reported.
      EXPECT_LE(j + 1 - streamed.size(), 4u);
    }
    lanes.Finish();
    ASSERT_EQ(streamed.size(), lengths.size());
    for (size_t j = 0; j < lengths.size(); ++j) {
      double signal = 0, noise = 0;
      auto a = f[j].span<float>();
      auto b = q[j].span<float>();
      for (size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        signal += static_cast<double>(a[i]) * a[i];
        noise += d * d;
      }
      const SquaredErrorSums& lane = streamed.at(absl::StrCat(j));
      const SquaredErrorSums one = CompareTensors(f[j], q[j]);
      EXPECT_EQ(std::memcmp(&lane.signal, &signal, sizeof(double)), 0) << j;
      EXPECT_EQ(std::memcmp(&lane.noise, &noise, sizeof(double)), 0) << j;
      EXPECT_EQ(std::memcmp(&one.signal, &signal, sizeof(double)), 0) << j;
      EXPECT_EQ(std::memcmp(&one.noise, &noise, sizeof(double)), 0) << j;
    }
  }
  std::map<std::string, SquaredErrorSums> streamed;
  SquaredErrorLanes lanes(
      [&](const std::string& name, const SquaredErrorSums& s) {
        streamed[name] = s;
      });
  lanes.Add("a", make(8), make(8));
  lanes.Add("mismatch", make(8), make(7));
  lanes.Finish();
  EXPECT_EQ(streamed.at("mismatch").signal, 0.0);
  EXPECT_EQ(streamed.at("mismatch").noise, 0.0);
  EXPECT_GT(streamed.at("a").signal, 0.0);
}

}  // namespace
}  // namespace quantd
