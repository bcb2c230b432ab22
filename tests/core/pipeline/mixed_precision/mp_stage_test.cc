// Mixed precision wired into the job, on the example CNN (conv1, dwconv,
// pwconv, fc; imx500@4.0 offers 8/4/2-bit kernels): targets, overrides,
// infeasible budgets, determinism, and the cone-based sensitivity against a
// naive full-model evaluation.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "clients/batch/proto_output.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/mixed_precision/distance_weighting.h"
#include "core/mixed_precision/sensitivity_metric.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/mixed_precision/sensitivity.h"
#include "core/runtime/progress.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/example_model.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

v1::QuantizeRequest ExampleRequest() {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const auto& s : MakeExampleImages(8, 1)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.0");
  return r;
}

class MixedPrecisionJobTest : public testing::BuiltinTpcJobTest {};

std::map<std::string, int> KernelBits(const v1::QuantizeResult& r) {
  std::map<std::string, int> bits;
  for (const auto& n : r.quantized_graph().nodes()) {
    for (const auto& w : n.weights()) {
      if (w.attr() == "kernel_attr") bits[n.name()] = w.n_bits();
    }
  }
  return bits;
}

TEST_F(MixedPrecisionJobTest, WeightsTargetIsMetWithLowerBitKernels) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.6);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const double base = result->baseline_8bit().weights_memory_bytes();
  ASSERT_GT(base, 0);
  EXPECT_DOUBLE_EQ(result->targets().weights_memory_bytes(), 0.6 * base);
  EXPECT_LE(result->resource_utilization().weights_memory_bytes(), 0.6 * base);
  int below_eight = 0;
  for (const auto& [name, bits] : KernelBits(*result)) {
    if (bits < 8) ++below_eight;
  }
  EXPECT_GT(below_eight, 0);
  // Every searched node carries one sensitivity per TPC candidate; its
  // 8-bit candidate is the least sensitive.
  int searched = 0;
  for (const auto& n : result->quantized_graph().nodes()) {
    if (n.candidate_sensitivity_size() == 0) continue;
    ++searched;
    std::vector<double> valid;
    for (double s : n.candidate_sensitivity()) {
      if (s >= 0) valid.push_back(s);
    }
    ASSERT_GE(valid.size(), 2u) << n.name();
    // More bits, less distance: the minimum is not the maximum.
    EXPECT_LT(*std::min_element(valid.begin(), valid.end()),
              *std::max_element(valid.begin(), valid.end()))
        << n.name();
  }
  EXPECT_GE(searched, 3);
}

TEST_F(MixedPrecisionJobTest, SmallerOfAbsoluteAndFractionalTargetWins) {
  v1::QuantizeRequest r = ExampleRequest();
  auto* mp = r.mutable_mixed_precision();
  mp->mutable_target()->set_weights_memory_bytes(1e12);
  mp->mutable_target_fraction()->set_weights_memory_bytes(0.5);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_DOUBLE_EQ(result->targets().weights_memory_bytes(),
                   0.5 * result->baseline_8bit().weights_memory_bytes());
}

TEST_F(MixedPrecisionJobTest, InfeasibleBudgetNamesTheSmallestFigure) {
  v1::QuantizeRequest r = ExampleRequest();
  // All kernels at 2 bits is 25% of the 8-bit kernel memory: 10% cannot fit.
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.1);
  auto result = Run(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              HasSubstr("weights: smallest achievable"));
}

TEST_F(MixedPrecisionJobTest, TypeOverrideAloneSetsEveryConvKernel) {
  v1::QuantizeRequest r = ExampleRequest();
  auto* o = r.mutable_mixed_precision()->add_bit_width_overrides();
  o->mutable_filter()->set_node_type("Conv");
  o->set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
  o->set_bits(4);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  int convs = 0;
  for (const auto& n : result->quantized_graph().nodes()) {
    if (n.op_type() == "Conv") {
      ++convs;
      EXPECT_EQ(n.weights_bits(), 4) << n.name();
    }
    if (n.op_type() == "Gemm") EXPECT_EQ(n.weights_bits(), 8);
  }
  EXPECT_EQ(convs, 3);
  EXPECT_FALSE(result->targets().has_weights_memory_bytes());
}

TEST_F(MixedPrecisionJobTest, SearchKeepsOverriddenNodes) {
  v1::QuantizeRequest r = ExampleRequest();
  auto* mp = r.mutable_mixed_precision();
  mp->mutable_target_fraction()->set_weights_memory_bytes(0.5);
  auto* o = mp->add_bit_width_overrides();
  o->mutable_filter()->set_node_name("fc");
  o->set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
  o->set_bits(2);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(KernelBits(*result)["fc"], 2);
  EXPECT_LE(result->resource_utilization().weights_memory_bytes(),
            result->targets().weights_memory_bytes());
}

TEST_F(MixedPrecisionJobTest, OverrideWithBitsTheTpcLacksNamesTheChoices) {
  v1::QuantizeRequest r = ExampleRequest();
  auto* o = r.mutable_mixed_precision()->add_bit_width_overrides();
  o->mutable_filter()->set_name_scope("conv");
  o->set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
  o->set_bits(3);
  auto result = Run(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("weights bits: 2, 4, 8"));
  EXPECT_THAT(result.status().message(), HasSubstr("conv1"));
}

TEST_F(MixedPrecisionJobTest, MalformedOverrideIsRejectedUpFront) {
  v1::QuantizeRequest r = ExampleRequest();
  auto* o = r.mutable_mixed_precision()->add_bit_width_overrides();
  o->set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
  o->set_bits(4);
  absl::Status st = ValidateQuantizeRequest(r, JobLimits()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("bit_width_overrides[0].filter"));
}

TEST_F(MixedPrecisionJobTest, NegativeSensitivityDepthIsRejectedUpFront) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  r.mutable_mixed_precision()->set_sensitivity_depth(-1);
  absl::Status st = ValidateQuantizeRequest(r, JobLimits()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("mixed_precision.sensitivity_depth"));
}

// A local sensitivity is still a search under the same budget: met, with
// every candidate's sensitivity reported. conv1's cone (fused with its
// BatchNormalization and Relu, then dwconv and pwconv, each fused with its
// activation) first meets an interest point at the Gemm's logits: cut
// there, it leaves out the Softmax's probs, which the whole cone measures,
// so its sensitivities differ from the whole cone's.
TEST_F(MixedPrecisionJobTest, CutConesMeetTheBudget) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.5);
  auto whole = Run(r);
  ASSERT_TRUE(whole.ok()) << whole.status();
  r.mutable_mixed_precision()->set_sensitivity_depth(1);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  auto conv1 = [](const v1::QuantizeResult& q) {
    for (const auto& n : q.quantized_graph().nodes()) {
      if (n.name() == "conv1") {
        return std::vector<double>(n.candidate_sensitivity().begin(),
                                   n.candidate_sensitivity().end());
      }
    }
    return std::vector<double>();
  };
  ASSERT_FALSE(conv1(*whole).empty());
  EXPECT_NE(conv1(*result), conv1(*whole));
  EXPECT_LE(result->resource_utilization().weights_memory_bytes(),
            result->targets().weights_memory_bytes());
  int searched = 0;
  for (const auto& n : result->quantized_graph().nodes()) {
    if (n.candidate_sensitivity_size() > 0) ++searched;
  }
  EXPECT_EQ(searched, 4);  // three Convs and the Gemm
}

TEST_F(MixedPrecisionJobTest, SameAllocationAndSensitivitiesForAnyThreadCount) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.6);
  auto serial = Run(r);
  ThreadPool pool(2);
  auto parallel = Run(r, {.pool = &pool});
  ASSERT_TRUE(serial.ok()) << serial.status();
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_EQ(SerializeDeterministic(serial->quantized_graph()),
            SerializeDeterministic(parallel->quantized_graph()));
}

// The sensitivity runs a job reports to its progress sink: each run's last
// report reads "sensitivity T/T".
class SensitivityRunCounter : public ProgressSink {
 public:
  void Report(const Progress& p) override {
    int done = 0, total = 0;
    if (std::sscanf(p.message.c_str(), "sensitivity %d/%d", &done, &total) ==
            2 &&
        done == total) {
      ++runs_;
    }
  }
  int runs() const { return runs_; }

 private:
  int runs_ = 0;
};

// A quality target under a budget re-runs the mixed-precision search for
// each re-selection, and its equalization trial the whole MP stage on the
// equalized graph: both take the job's sensitivities instead of measuring
// them again (the cone runs: 15x a PTQ job on ppocr_rec). The budget holds.
TEST_F(MixedPrecisionJobTest, QualityTargetReusesTheSensitivities) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.6);
  SensitivityRunCounter plain_runs;
  auto plain = Run(r, {.sink = &plain_runs});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain_runs.runs(), 1);
  r.mutable_quality_target()->set_value(200);
  r.mutable_quality_target()->set_best_effort(true);
  r.mutable_quality_target()->set_skip_gptq(true);
  SensitivityRunCounter target_runs;
  auto target = Run(r, {.sink = &target_runs});
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target_runs.runs(), 1);
  EXPECT_THAT(target->report_json(),
              HasSubstr("data_channel_equalization: true"));
  EXPECT_LE(target->resource_utilization().weights_memory_bytes(),
            0.6 * target->baseline_8bit().weights_memory_bytes());
  // Whichever trial won, its sensitivities are the job's own.
  std::map<std::string, std::vector<double>> measured;
  for (const auto& n : plain->quantized_graph().nodes()) {
    measured[n.name()].assign(n.candidate_sensitivity().begin(),
                              n.candidate_sensitivity().end());
  }
  int searched = 0;
  for (const auto& n : target->quantized_graph().nodes()) {
    if (n.candidate_sensitivity_size() == 0) continue;
    ++searched;
    EXPECT_EQ(std::vector<double>(n.candidate_sensitivity().begin(),
                                  n.candidate_sensitivity().end()),
              measured[n.name()])
        << n.name();
  }
  EXPECT_GE(searched, 3);
}

// pwconv's kernel at 2 bits, per tensor, symmetric threshold = max |w|.
WeightParams PwconvTwoBitKernel(const Model& model) {
  const Tensor& w = *model.graph.FindInitializer("pw.w");
  float max_abs = 0;
  for (float v : w.span<float>()) max_abs = std::max(max_abs, std::abs(v));
  WeightParams wq;
  wq.attr = "kernel_attr";
  wq.input_index = 1;
  wq.method = v1::QUANTIZATION_METHOD_SYMMETRIC;
  wq.n_bits = 2;
  wq.channel_axis = -1;
  // 2-bit signed grid {-2..1} * T/2.
  const double scale = max_abs / 2.0;
  wq.scales.push_back(scale);
  wq.zero_points.push_back(0);
  wq.thresholds.push_back(max_abs);
  wq.int_values = Tensor(DType::kInt32, w.shape());
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    wq.int_values.mutable_data<int32_t>()[i] = static_cast<int32_t>(
        std::clamp(std::nearbyint(w.data<float>()[i] / scale), -2.0, 1.0));
  }
  wq.storage = DType::kInt8;
  return wq;
}

int NodeIndex(const Model& model, const std::string& name) {
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    if (model.graph.nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// The distances at `points` and `outputs` ([point][sample]) between the
// whole float model and the whole model with pwconv's kernel `wq`: the
// naive evaluation the cones must equal.
void NaiveDistances(const Model& model, const std::vector<SampleFeeds>& samples,
                    const WeightParams& wq,
                    const std::vector<InterestPoint>& points,
                    const std::vector<InterestPoint>& outputs,
                    std::vector<double>* pd, std::vector<double>* od) {
  const std::vector<WeightParams> weights = {wq};
  ModelQuantization quantization;
  quantization.nodes.push_back({"pwconv", {}, &weights});
  auto plan = LowerToQdqPlan(model.graph, quantization, ExportOptions());
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto fq_model = WithFakeQuantWeights(model, *plan);
  ASSERT_TRUE(fq_model.ok());
  auto fexec = Executor::Create(model);
  auto qexec = Executor::Create(*fq_model);
  ASSERT_TRUE(fexec.ok() && qexec.ok());
  RunOptions run;
  for (const auto& p : points) {
    bool is_output = false;
    for (const auto& o : model.graph.outputs) is_output |= o.name == p.tensor;
    if (!is_output) run.extra_outputs.push_back(p.tensor);
  }
  const size_t S = samples.size();
  pd->assign(points.size() * S, 0.0);
  od->assign(outputs.size() * S, 0.0);
  for (size_t s = 0; s < S; ++s) {
    auto f = (*fexec)->Run(samples[s], run);
    auto q = (*qexec)->Run(samples[s], run);
    ASSERT_TRUE(f.ok() && q.ok());
    auto dist = [&](const InterestPoint& ip) {
      auto fs = f->at(ip.tensor).span<float>();
      auto qs = q->at(ip.tensor).span<float>();
      switch (ip.kind) {
        case DistanceKind::kKl:
          return *mixed_precision::KlDivergence(fs, qs);
        case DistanceKind::kCosine:
          return *mixed_precision::CosineDistance(fs, qs);
        default:
          return *mixed_precision::NormalizedMse(fs, qs);
      }
    };
    for (size_t p = 0; p < points.size(); ++p) {
      (*pd)[p * S + s] = dist(points[p]);
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      (*od)[o * S + s] = dist(outputs[o]);
    }
  }
}

// pwconv at 2 bits, its sensitivity on three samples in two chunks.
absl::StatusOr<std::vector<std::vector<double>>> PwconvSensitivity(
    const Model& model, const std::vector<SampleFeeds>& samples,
    const WeightParams& wq, const std::vector<InterestPoint>& points,
    const std::vector<InterestPoint>& outputs, int depth) {
  SensitivityNode sn;
  sn.node = NodeIndex(model, "pwconv");
  SensitivityCandidate cand;
  cand.weights.push_back(wq);
  sn.candidates.push_back(cand);
  SensitivityOptions options;
  options.chunk_samples = 2;  // two chunks
  options.depth = depth;
  return ComputeSensitivities(model, {sn}, points, outputs, samples, options,
                              nullptr, nullptr, nullptr);
}

// The cone evaluation (float cache + downstream nodes only) equals running
// the whole model with only that node fake-quantized.
TEST(SensitivityTest, ConeEvaluationEqualsFullModelRun) {
  Model model = MakeExampleCnn();
  std::vector<SampleFeeds> samples = MakeExampleImages(3, 7);
  ASSERT_GE(NodeIndex(model, "pwconv"), 0);
  const WeightParams wq = PwconvTwoBitKernel(model);
  std::vector<InterestPoint> points = MpInterestPoints(model, {});
  std::vector<InterestPoint> outputs = MpOutputPoints(model);
  ASSERT_FALSE(points.empty());
  auto got = PwconvSensitivity(model, samples, wq, points, outputs, 0);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<double> pd, od;
  NaiveDistances(model, samples, wq, points, outputs, &pd, &od);
  auto want = mixed_precision::SensitivityMetric(
      pd, points.size(), od, outputs.size(), samples.size(),
      mixed_precision::WeightingOptions());
  ASSERT_TRUE(want.ok());
  EXPECT_GT(*want, 0);
  EXPECT_DOUBLE_EQ((*got)[0][0], *want);
}

// Cut cones (sensitivity_depth) measure only the points their paths reach,
// the rest count 0. With no plan nothing is fused, so the points are every
// Conv's output, the Gemm's (logits) and probs, also the output. pwconv's
// path meets its own output first (depth 1: nothing else), then logits
// (depth 2), then probs (depth 3: all of the whole cone).
TEST(SensitivityTest, CutConesMeasureThePointsWithinTheirDepth) {
  Model model = MakeExampleCnn();
  std::vector<SampleFeeds> samples = MakeExampleImages(3, 7);
  ASSERT_GE(NodeIndex(model, "pwconv"), 0);
  const WeightParams wq = PwconvTwoBitKernel(model);
  const std::vector<InterestPoint> points = MpInterestPoints(model, {});
  const std::vector<InterestPoint> outputs = MpOutputPoints(model);
  std::vector<double> pd, od;
  NaiveDistances(model, samples, wq, points, outputs, &pd, &od);
  const size_t S = samples.size();
  auto within = [&](const std::set<std::string>& reached, bool output) {
    std::vector<double> p = pd, o = od;
    for (size_t i = 0; i < points.size(); ++i) {
      if (reached.count(points[i].tensor)) continue;
      std::fill(p.begin() + i * S, p.begin() + (i + 1) * S, 0.0);
    }
    if (!output) std::fill(o.begin(), o.end(), 0.0);
    auto m = mixed_precision::SensitivityMetric(
        p, points.size(), o, outputs.size(), S,
        mixed_precision::WeightingOptions());
    EXPECT_TRUE(m.ok());
    return m.ok() ? *m : -1.0;
  };
  const double whole = within({"pw_out", "logits", "probs"}, true);
  const std::vector<std::pair<int, double>> want = {
      {1, within({"pw_out"}, false)},
      {2, within({"pw_out", "logits"}, false)},
      {3, whole},
      {0, whole}};
  for (const auto& [depth, value] : want) {
    auto got = PwconvSensitivity(model, samples, wq, points, outputs, depth);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_GT((*got)[0][0], 0);
    EXPECT_DOUBLE_EQ((*got)[0][0], value) << "depth " << depth;
  }
  EXPECT_LT(want[0].second, want[1].second);
}

}  // namespace
}  // namespace quantd

namespace quantd {
namespace {

// Chunks of the float cache and the four-sample lanes only group the work:
// every sensitivity is the same bit for bit with one sample a chunk, two,
// four (a one-byte cache budget: one lane group) or all nine at once (two
// full lane groups and a partial one), serially or on two threads.
TEST(SensitivityTest, SameSensitivitiesForAnyChunkSizeAndThreadCount) {
  Model model = MakeExampleCnn();
  std::vector<SampleFeeds> samples = MakeExampleImages(9, 5);
  const WeightParams two_bit = PwconvTwoBitKernel(model);
  std::vector<SensitivityNode> nodes(1);
  nodes[0].node = NodeIndex(model, "pwconv");
  ASSERT_GE(nodes[0].node, 0);
  nodes[0].candidates.resize(2);  // the 2-bit kernel; nothing quantized
  nodes[0].candidates[0].weights.push_back(two_bit);
  const auto points = MpInterestPoints(model, {});
  const auto outputs = MpOutputPoints(model);
  auto run = [&](int chunk, int64_t budget, ThreadPool* pool) {
    SensitivityOptions options;
    options.chunk_samples = chunk;
    options.cache_budget_bytes = budget;
    auto got = ComputeSensitivities(model, nodes, points, outputs, samples,
                                    options, pool, nullptr, nullptr);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *got : std::vector<std::vector<double>>();
  };
  ThreadPool pool(2);
  const auto all = run(32, 0, nullptr);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_GT(all[0][0], 0);
  EXPECT_EQ(run(1, 0, nullptr), all);
  EXPECT_EQ(run(32, 1, nullptr), all);
  EXPECT_EQ(run(2, 0, &pool), all);
  EXPECT_EQ(run(32, 0, &pool), all);
}

}  // namespace
}  // namespace quantd
