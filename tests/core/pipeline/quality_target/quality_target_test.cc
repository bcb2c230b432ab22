// The quality target (docs/quality_target.md): a hand-built graph whose one
// bottleneck layer the search must find, an unreachable target, the cosine
// metric, cancellation, and ONNX Runtime running the exported QDQ on
// held-out samples.
//
// The graph: x -> Mul(x, x) = "square" -> Tanh = "squash" -> output.
// x = k/16 with integer k in [-128, 127]: the 8-bit input grid (PoT
// threshold 8, step 1/16) holds every x exactly. Most x ~ N(0, 1), a few at
// +-127/16, so square spans [0, 63]: its unsigned 8-bit grid (threshold 64)
// has step 1/4 (noise 1/16/12 = 0.0052 per element), which Tanh's slope
// (~0.4 around square ~ 1) carries to the output: about 24 dB. Tanh's own
// 8-bit output (range [-1, 1], step 1/128) alone costs ~49 dB. So 35 dB
// needs exactly one upgrade: square's activation to 16 bits (imx500@4.0's
// Mul and Tanh take and give 16-bit activations).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/batch/job_files.h"
#include "clients/batch/job_options.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/quality_target/target_gptq_trial.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/example_model.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace quality_target_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kWidth = 1024;

std::string SquashModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, kWidth});
  b.AddNode("Mul", {"x", "x"}, {"sq"}, "square");
  b.AddNode("Tanh", {"sq"}, {"y"}, "squash");
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

// x = k/16, k ~ round(16 N(0, 1)) clamped to [-127, 127], every 100th
// element +-127 (the outliers that widen square's grid).
std::map<std::string, Tensor> Sample(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 16.0);
  std::vector<float> x(kWidth);
  for (int i = 0; i < kWidth; ++i) {
    double k = std::clamp(std::round(normal(rng)), -127.0, 127.0);
    if (i % 100 == 7) k = (i / 100) % 2 == 0 ? 127 : -127;
    x[i] = static_cast<float>(k / 16.0);
  }
  return {{"x", Tensor::FromVector<float>(x, {1, kWidth})}};
}

v1::QuantizeRequest SquashRequest(const std::string& tpc) {
  v1::QuantizeRequest r;
  r.set_onnx_model(SquashModel());
  for (uint32_t s = 0; s < 8; ++s) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : Sample(s)) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  for (uint32_t s = 100; s < 104; ++s) {
    v1::Sample* p = r.add_evaluation_samples();
    for (const auto& [name, t] : Sample(s)) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name(tpc);
  return r;
}

void SetTarget(v1::QualityTarget::Metric metric, double value,
               v1::QuantizeRequest* r) {
  r->mutable_quality_target()->set_metric(metric);
  r->mutable_quality_target()->set_value(value);
}

class QualityTargetTest : public testing::BuiltinTpcJobTest {};

// The memory stages a job reaches (JobContext.on_memory_stage), in order.
struct StageRecorder {
  testing::JobRun Run() {
    testing::JobRun run;
    run.on_memory_stage = [this](JobMemoryStage s) {
      reached.push_back(s);
      return absl::OkStatus();
    };
    return run;
  }
  std::vector<JobMemoryStage> reached;
};

int ActivationBits(const v1::QuantizeResult& r, const std::string& node) {
  for (const auto& n : r.quantized_graph().nodes()) {
    if (n.name() == node) return n.activation_bits();
  }
  return -1;
}

// The figure a FAILED_PRECONDITION names as the best reached ("best X dB").
double BestFigureNamed(const absl::Status& status) {
  const std::string message(status.message());
  const size_t at = message.find("best ");
  double best = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtod(
          message.substr(at + 5, message.find(" dB", at) - at - 5), &best)) {
    ADD_FAILURE() << "no best figure in: " << message;
  }
  return best;
}

TEST_F(QualityTargetTest, PlainJobSitsBetweenTheTwoBounds) {
  // The premise of the tests below: 8 bits everywhere misses 35 dB.
  auto result = Run(SquashRequest("imx500@4.0"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->output_sqnr_db(), 18.0);
  EXPECT_LT(result->output_sqnr_db(), 30.0);
}

TEST_F(QualityTargetTest, UpgradesExactlyTheBottleneckLayer) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 35, &r);
  // The ceiling reaches the target: the upgrades are ranked (a memory
  // stage), and nothing else is tried.
  StageRecorder stages;
  auto result = Run(r, stages.Run());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(stages.reached,
            std::vector<JobMemoryStage>{JobMemoryStage::kTargetRanking});
  EXPECT_GE(result->output_sqnr_db(), 35.0);
  EXPECT_EQ(ActivationBits(*result, "square"), 16);
  EXPECT_EQ(ActivationBits(*result, "squash"), 8);
  auto q = nlohmann::json::parse(result->report_json())["quality_target"];
  EXPECT_EQ(q["metric"], "sqnr");
  EXPECT_TRUE(q["met"].get<bool>());
  EXPECT_LT(q["baseline"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(q["reached"].get<double>(), result->output_sqnr_db());
  int bit_changes = 0;
  for (const auto& c : q["changes"]) {
    if (c["node"] == "") continue;  // a job-wide option
    ++bit_changes;
    EXPECT_EQ(c["node"], "square");
    EXPECT_EQ(c["what"], "activation_bits");
    EXPECT_EQ(c["from"], "8");
    EXPECT_EQ(c["to"], "16");
  }
  EXPECT_EQ(bit_changes, 1);
  // 1024 more bytes of activation than the 8-bit baseline, at most.
  EXPECT_LE(q["memory_vs_8bit"]["total"].get<double>(), 2.0);
}

TEST_F(QualityTargetTest, TargetMetAsConfiguredChangesNothing) {
  v1::QuantizeRequest plain = SquashRequest("imx500@4.0");
  auto base = Run(plain);
  ASSERT_TRUE(base.ok()) << base.status();
  v1::QuantizeRequest r = plain;
  SetTarget(v1::QualityTarget::METRIC_SQNR, 10, &r);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->qdq_onnx(), base->qdq_onnx());
  auto q = nlohmann::json::parse(result->report_json())["quality_target"];
  EXPECT_TRUE(q["changes"].empty());
  EXPECT_EQ(q["steps"].size(), 1u);
}

// The memory stages the job reports (JobContext.on_memory_stage): none for
// a target met as configured, which holds no more than the plain job.
TEST_F(QualityTargetTest, TargetMetAsConfiguredReachesNoMemoryStage) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 10, &r);
  StageRecorder stages;
  ASSERT_TRUE(Run(r, stages.Run()).ok());
  EXPECT_TRUE(stages.reached.empty());
}

TEST_F(QualityTargetTest, UnreachableTargetNamesTheBestFigure) {
  // imx500@1.0 offers 8-bit activations only: no upgrade exists.
  v1::QuantizeRequest plain = SquashRequest("imx500@1.0");
  auto base = Run(plain);
  ASSERT_TRUE(base.ok()) << base.status();
  v1::QuantizeRequest r = plain;
  SetTarget(v1::QualityTarget::METRIC_SQNR, 40, &r);
  auto result = Run(r);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition)
      << result.status();
  const std::string message(result.status().message());
  EXPECT_THAT(message, HasSubstr("sqnr 40.00 dB out of reach of imx500@1.0"));
  const double best = BestFigureNamed(result.status());
  // The best is at least the configuration as requested.
  EXPECT_GE(best, base->output_sqnr_db() - 0.01);
  EXPECT_LT(best, 40.0);
}

TEST_F(QualityTargetTest, CosineTargetIsMetOnTheWorstOutput) {
  v1::QuantizeRequest plain = SquashRequest("imx500@4.0");
  auto base = Run(plain);
  ASSERT_TRUE(base.ok()) << base.status();
  const double base_cosine =
      nlohmann::json::parse(base->report_json())["outputs"][0]["cosine"];
  ASSERT_LT(base_cosine, 0.9999);
  v1::QuantizeRequest r = plain;
  SetTarget(v1::QualityTarget::METRIC_COSINE, 0.9999, &r);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  auto report = nlohmann::json::parse(result->report_json());
  EXPECT_EQ(report["quality_target"]["metric"], "cosine");
  EXPECT_GE(report["outputs"][0]["cosine"].get<double>(), 0.9999);
  EXPECT_DOUBLE_EQ(report["quality_target"]["reached"].get<double>(),
                   report["outputs"][0]["cosine"].get<double>());
  EXPECT_EQ(ActivationBits(*result, "square"), 16);
}

TEST_F(QualityTargetTest, InvalidCosineValueNamesTheField) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_COSINE, 1.5, &r);
  auto result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("quality_target.value"));
}

// The example CNN at imx500@4.0 (38.60 dB as configured; activation bias
// correction gains 0.1 dB; no 16-bit upgrade it allows helps), 8 samples.
// No configuration reaches kOutOfReachDb, data channel equalization (tried
// when a target is missed) included.
constexpr double kOutOfReachDb = 45;
v1::QuantizeRequest ExampleCnnRequest() {
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

// Best effort returns the configuration the failing search names as its
// best (not the one requested), says so in a warning, and reports the
// target as missed.
TEST_F(QualityTargetTest, BestEffortReturnsTheBestConfigurationFound) {
  v1::QuantizeRequest plain = ExampleCnnRequest();
  auto base = Run(plain);
  ASSERT_TRUE(base.ok()) << base.status();
  v1::QuantizeRequest r = plain;
  SetTarget(v1::QualityTarget::METRIC_SQNR, kOutOfReachDb, &r);
  auto failed = Run(r);
  ASSERT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition)
      << failed.status();
  const double best = BestFigureNamed(failed.status());
  r.mutable_quality_target()->set_best_effort(true);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  // The message rounds to 0.01 dB.
  EXPECT_NEAR(result->output_sqnr_db(), best, 0.005);
  EXPECT_GT(result->output_sqnr_db(), base->output_sqnr_db());
  EXPECT_LT(result->output_sqnr_db(), kOutOfReachDb);
  auto report = nlohmann::json::parse(result->report_json());
  EXPECT_FALSE(report["quality_target"]["met"].get<bool>());
  EXPECT_DOUBLE_EQ(report["quality_target"]["reached"].get<double>(),
                   result->output_sqnr_db());
  // The warning is the failing job's message, word for word.
  bool warned = false;
  for (const auto& w : report["warnings"]) {
    warned |= w.get<std::string>() == failed.status().message();
  }
  EXPECT_TRUE(warned) << report["warnings"].dump();
}

// Out of reach after the options, the upgrades and channel equalization,
// the search's last trial is GPTQ: kept only when it raises the figure
// (the result is then the trained model), else the result is the search's
// own, byte for byte the job with the trial skipped. Each step's gain is
// its figure against the last kept step's.
TEST_F(QualityTargetTest, GptqIsTheLastTrialWhenTheSearchFallsShort) {
  v1::QuantizeRequest r = ExampleCnnRequest();
  SetTarget(v1::QualityTarget::METRIC_SQNR, kOutOfReachDb, &r);
  r.mutable_quality_target()->set_best_effort(true);
  v1::QuantizeRequest skip = r;
  skip.mutable_quality_target()->set_skip_gptq(true);
  // The memory stages, in order: the equalization trial, then the GPTQ
  // trial (the ceiling falls short: no ranking), and past its checkpoint
  // the rest of it when the trial goes on.
  StageRecorder without_stages, with_stages;
  auto without = Run(skip, without_stages.Run());
  EXPECT_EQ(without_stages.reached,
            std::vector<JobMemoryStage>{JobMemoryStage::kTargetEqualization});
  auto with = Run(r, with_stages.Run());
  std::vector<JobMemoryStage> stages = {JobMemoryStage::kTargetEqualization,
                                        JobMemoryStage::kTargetGptq};
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  auto q_without =
      nlohmann::json::parse(without->report_json())["quality_target"];
  for (const auto& step : q_without["steps"]) {
    EXPECT_NE(step["action"].get<std::string>().rfind("gptq", 0), 0u);
  }
  auto q = nlohmann::json::parse(with->report_json())["quality_target"];
  const auto& last = q["steps"].back();
  const std::string action = last["action"].get<std::string>();
  const std::string trial =
      absl::StrCat("gptq: ", kTargetGptqEpochs, " epoch(s)");
  EXPECT_EQ(action.rfind(trial, 0), 0u) << action;
  const double figure = last["figure"].get<double>();
  const double search = without->output_sqnr_db();
  EXPECT_NEAR(last["gain"].get<double>(), figure - search, 1e-9);
  // A trial below its starting figure at its checkpoint stops there.
  int done = 0, total = 0;
  if (std::sscanf(action.c_str() + trial.size(), ", stopped after %d/%d blocks",
                  &done, &total) == 2) {
    EXPECT_EQ(done, static_cast<int>(GptqCheckpointBlocks(total)));
    EXPECT_LT(done, total);
    EXPECT_LT(figure, search);
    EXPECT_FALSE(last["kept"].get<bool>());
  } else {
    EXPECT_EQ(action, trial);
    stages.push_back(JobMemoryStage::kTargetGptqRest);
  }
  EXPECT_EQ(with_stages.reached, stages);
  if (last["kept"].get<bool>()) {
    EXPECT_GT(figure, search + 0.01);
    EXPECT_DOUBLE_EQ(with->output_sqnr_db(), figure);
    EXPECT_EQ(q["changes"].back()["what"], "gptq");
  } else {
    EXPECT_LE(figure, search + 0.01);
    EXPECT_EQ(with->qdq_onnx(), without->qdq_onnx());
  }
  EXPECT_DOUBLE_EQ(q["reached"].get<double>(), with->output_sqnr_db());
  // Every gain is the step's figure against the last kept one before it.
  std::optional<double> stood_at;
  for (const auto& step : q["steps"]) {
    if (step["figure"].is_number() && stood_at) {
      EXPECT_NEAR(step["gain"].get<double>(),
                  step["figure"].get<double>() - *stood_at, 1e-9)
          << step.dump();
    }
    EXPECT_GE(step["seconds"].get<double>(), 0.0);
    if (step["kept"].get<bool>() && step["figure"].is_number()) {
      stood_at = step["figure"].get<double>();
    }
  }
}

// A stage the server cannot reserve for ends the job with its error.
TEST_F(QualityTargetTest, RefusedMemoryStageEndsTheJob) {
  v1::QuantizeRequest r = ExampleCnnRequest();
  SetTarget(v1::QualityTarget::METRIC_SQNR, kOutOfReachDb, &r);
  r.mutable_quality_target()->set_best_effort(true);
  testing::JobRun run;
  run.on_memory_stage = [](JobMemoryStage s) {
    return s == JobMemoryStage::kTargetGptq
               ? absl::ResourceExhaustedError("no room for the GPTQ trial")
               : absl::OkStatus();
  };
  auto result = Run(r, run);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("no room for the GPTQ trial"));
}

// A target with a mixed-precision budget never leaves it: the squash graph
// at 60 dB wants both tensors at 16 bits; an activation budget that holds
// only the configuration the 35 dB target chose (square at 16 bits) keeps
// squash at 8 and returns the best figure inside it.
TEST_F(QualityTargetTest, BudgetCapsTheUpgrades) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 35, &r);
  auto one = Run(r);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(ActivationBits(*one, "square"), 16);
  ASSERT_EQ(ActivationBits(*one, "squash"), 8);
  const double budget = one->resource_utilization().activation_memory_bytes();
  SetTarget(v1::QualityTarget::METRIC_SQNR, 60, &r);
  r.mutable_quality_target()->set_best_effort(true);
  r.mutable_quality_target()->set_skip_gptq(true);
  auto unbounded = Run(r);
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_EQ(ActivationBits(*unbounded, "squash"), 16);
  ASSERT_GT(unbounded->resource_utilization().activation_memory_bytes(),
            budget);
  r.mutable_mixed_precision()->mutable_target()->set_activation_memory_bytes(
      budget);
  auto capped = Run(r);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_LE(capped->resource_utilization().activation_memory_bytes(), budget);
  EXPECT_EQ(ActivationBits(*capped, "square"), 16);
  EXPECT_EQ(ActivationBits(*capped, "squash"), 8);
  EXPECT_NEAR(capped->output_sqnr_db(), one->output_sqnr_db(), 0.01);
  EXPECT_FALSE(
      nlohmann::json::parse(capped->report_json())["quality_target"]["met"]
          .get<bool>());
}

// Every stage of the search runs, and 1 and 3 threads end on the same best
// figure and the same trial.
TEST_F(QualityTargetTest, ThreadCountDoesNotChangeAFailedSearch) {
  v1::QuantizeRequest r = ExampleCnnRequest();
  SetTarget(v1::QualityTarget::METRIC_SQNR, kOutOfReachDb, &r);
  ThreadPool pool(3);
  auto serial = Run(r);
  auto parallel = Run(r, {.pool = &pool});
  EXPECT_EQ(serial.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(serial.status(), parallel.status());
}

TEST_F(QualityTargetTest, ThreadCountDoesNotChangeTheResult) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 35, &r);
  ThreadPool pool(3);
  auto serial = Run(r);
  auto parallel = Run(r, {.pool = &pool});
  ASSERT_TRUE(serial.ok()) << serial.status();
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_EQ(serial->qdq_onnx(), parallel->qdq_onnx());
  // Every field but the steps' seconds (timings).
  auto decisions = [](const std::string& report) {
    nlohmann::json q = nlohmann::json::parse(report)["quality_target"];
    for (auto& step : q["steps"]) step.erase("seconds");
    return q;
  };
  EXPECT_EQ(decisions(serial->report_json()),
            decisions(parallel->report_json()));
}

// --target-sqnr / --target-cosine / --target-metric (quantctl, manifests and
// Python share the table) become QuantizeRequest.quality_target.
TEST(QualityTargetOptions, FlagsSetTheRequestField) {
  JobFiles files;
  files.tpc = "imx500@4.0";
  ASSERT_TRUE(ApplyJobOption("target_cosine", "0.995", &files).ok());
  v1::QuantizeRequest r;
  ASSERT_TRUE(ApplyJobSettings(files, &r).ok());
  EXPECT_EQ(r.quality_target().metric(), v1::QualityTarget::METRIC_COSINE);
  EXPECT_DOUBLE_EQ(r.quality_target().value(), 0.995);
  ASSERT_TRUE(ApplyJobOption("target-sqnr", "30", &files).ok());
  const absl::Status both = ApplyJobSettings(files, &r);
  EXPECT_THAT(std::string(both.message()), HasSubstr("--target-metric"));
  ASSERT_TRUE(ApplyJobOption("target-metric", "sqnr", &files).ok());
  v1::QuantizeRequest chosen;
  ASSERT_TRUE(ApplyJobSettings(files, &chosen).ok());
  EXPECT_EQ(chosen.quality_target().metric(), v1::QualityTarget::METRIC_SQNR);
  EXPECT_DOUBLE_EQ(chosen.quality_target().value(), 30);
  EXPECT_FALSE(ApplyJobOption("target-cosine", "-1", &files).ok());
  EXPECT_FALSE(ApplyJobOption("target-sqnr", "inf", &files).ok());
  EXPECT_FALSE(chosen.quality_target().best_effort());
  ASSERT_TRUE(ApplyJobOption("target-best-effort", "true", &files).ok());
  v1::QuantizeRequest best_effort;
  ASSERT_TRUE(ApplyJobSettings(files, &best_effort).ok());
  EXPECT_TRUE(best_effort.quality_target().best_effort());
}

TEST(QualityTargetOptions, SkipGptqSetsTheFieldAndNeedsATarget) {
  JobFiles files;
  files.tpc = "imx500@4.0";
  ASSERT_TRUE(ApplyJobOption("target-skip-gptq", "true", &files).ok());
  v1::QuantizeRequest r;
  const absl::Status status = ApplyJobSettings(files, &r);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("--target-skip-gptq: needs --target-sqnr"));
  ASSERT_TRUE(ApplyJobOption("target-sqnr", "30", &files).ok());
  v1::QuantizeRequest with_target;
  ASSERT_TRUE(ApplyJobSettings(files, &with_target).ok());
  EXPECT_TRUE(with_target.quality_target().skip_gptq());
}

TEST(QualityTargetOptions, BestEffortNeedsATarget) {
  JobFiles files;
  files.tpc = "imx500@4.0";
  ASSERT_TRUE(ApplyJobOption("target-best-effort", "true", &files).ok());
  v1::QuantizeRequest r;
  const absl::Status status = ApplyJobSettings(files, &r);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("--target-best-effort: needs --target-sqnr"));
}

// Cancels the job once the target stage has run its first trial.
class CancelOnTargetTrial : public ProgressSink {
 public:
  explicit CancelOnTargetTrial(CancellationToken* token) : token_(token) {}
  void Report(const Progress& p) override {
    if (p.stage == "target" && p.message.rfind("trial 2", 0) == 0) {
      token_->Cancel(absl::CancelledError("client went away"));
    }
  }

 private:
  CancellationToken* token_;
};

TEST_F(QualityTargetTest, CancellationStopsTheSearch) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 35, &r);
  CancellationToken cancel;
  CancelOnTargetTrial sink(&cancel);
  auto result = Run(r, {.sink = &sink, .cancel = &cancel});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
}

// ONNX Runtime at its default optimization level runs the exported QDQ on
// samples the job never saw; the output SQNR against float holds the target.
TEST_F(QualityTargetTest, OnnxRuntimeHoldsTheTargetOnHeldOutSamples) {
  const char* src = std::getenv("QUANTD_SOURCE_DIR");
  const fs::path source = src != nullptr ? fs::path(src) : fs::current_path();
  if (!fs::exists(source / "tools/ort/node_modules/onnxruntime-node") ||
      std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs node and onnxruntime-node (scripts/install_ort.sh)";
  }
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 35, &r);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const fs::path tmp =
      fs::temp_directory_path() / absl::StrCat("qtarget_ort_", getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp / "in");
  const fs::path model = tmp / "model.onnx";
  {
    std::FILE* f = std::fopen(model.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(result->qdq_onnx().data(), 1, result->qdq_onnx().size(), f);
    std::fclose(f);
  }
  std::vector<std::map<std::string, Tensor>> held_out;
  for (uint32_t s = 500; s < 508; ++s) held_out.push_back(Sample(s));
  for (size_t i = 0; i < held_out.size(); ++i) {
    ASSERT_TRUE(
        WriteSample((tmp / "in").string(), absl::StrCat("s", i), held_out[i])
            .ok());
  }
  const std::string cmd = absl::StrCat(
      "node ", (source / "tools/ort/run_model.js").string(), " ",
      model.string(), " --inputs ", (tmp / "in").string(), " --out ",
      (tmp / "out").string(), " --threads 1 --optimization all > ",
      (tmp / "log.txt").string(), " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // Float reference: tanh(x^2) in double.
  double signal = 0, noise = 0;
  for (size_t i = 0; i < held_out.size(); ++i) {
    auto ort =
        ReadTensorFile((tmp / "out" / absl::StrCat("s", i) / "y.npy").string());
    ASSERT_TRUE(ort.ok()) << ort.status();
    const Tensor& x = held_out[i].at("x");
    ASSERT_EQ(ort->num_elements(), x.num_elements());
    for (int64_t k = 0; k < x.num_elements(); ++k) {
      const double v = x.data<float>()[k];
      const double f = std::tanh(v * v);
      signal += f * f;
      noise += (f - ort->data<float>()[k]) * (f - ort->data<float>()[k]);
    }
  }
  EXPECT_GE(10 * std::log10(signal / noise), 35.0);
  fs::remove_all(tmp);
}

// x -> square -> Mul(1/8) = "scale" -> Tanh -> y, the squash samples: at
// 8 bits, z_threshold 8 (which drops square's +-127/16 outliers from its
// statistics) gains 5 dB (28.1 -> 33.3 dB: a finer grid for the bulk, and
// the clipped outliers land on Tanh's flat part); with every tensor 16-bit
// the clipping is what remains (69.8 dB) and undoing it reaches 88.7 dB. So
// an 80 dB target is met only by taking z_threshold back after the
// upgrades.
TEST_F(QualityTargetTest, OptionKeptAtEightBitsIsUndoneAfterTheUpgrades) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, kWidth});
  b.FloatInitializer("k", {0.125f}, {1});
  b.AddNode("Mul", {"x", "x"}, {"sq"}, "square");
  b.AddNode("Mul", {"sq", "k"}, {"s"}, "scale");
  b.AddNode("Tanh", {"s"}, {"y"}, "squash");
  b.Output("y", DType::kFloat);
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  r.set_onnx_model(b.Serialize());
  SetTarget(v1::QualityTarget::METRIC_SQNR, 80, &r);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GE(result->output_sqnr_db(), 80.0);
  auto q = nlohmann::json::parse(result->report_json())["quality_target"];
  EXPECT_TRUE(q["met"].get<bool>());
  bool z_kept = false, z_undone = false;
  for (const auto& s : q["steps"]) {
    const std::string action = s["action"];
    z_kept |= action == "z_threshold: 8" && s["kept"].get<bool>();
    z_undone |=
        action.rfind("z_threshold: inf again", 0) == 0 && s["kept"].get<bool>();
  }
  EXPECT_TRUE(z_kept) << q["steps"].dump();
  EXPECT_TRUE(z_undone) << q["steps"].dump();
  for (const auto& c : q["changes"]) {
    EXPECT_NE(c["what"], "z_threshold") << q["changes"].dump();
  }
}

// Out of reach at the ceiling, a correction stage (a) did not keep is tried
// once more with the upgrades when its trial moved the figure (its effect
// depends on which tensors stay 8-bit); not when the figure stayed the
// same to the bit (no site for it), nor z_threshold, which only clips more
// of a finer grid. The squash model has no site for any correction.
TEST_F(QualityTargetTest, CorrectionsWithoutASiteAreNotTriedAgain) {
  v1::QuantizeRequest r = SquashRequest("imx500@4.0");
  SetTarget(v1::QualityTarget::METRIC_SQNR, 150, &r);  // 16-bit: 95.8 dB
  r.mutable_quality_target()->set_best_effort(true);
  r.mutable_quality_target()->set_skip_gptq(true);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  auto q = nlohmann::json::parse(result->report_json())["quality_target"];
  int corrections = 0, ceilings = 0;
  for (const auto& step : q["steps"]) {
    const std::string action = step["action"];
    ceilings += action.find("(every upgrade)") != std::string::npos;
    if (action.rfind("shift_negative", 0) == 0 ||
        action.rfind("activation_bias_correction", 0) == 0) {
      ++corrections;
      EXPECT_EQ(action.find(" again"), std::string::npos) << q["steps"].dump();
      EXPECT_EQ(step["gain"].get<double>(), 0.0) << q["steps"].dump();
    }
    EXPECT_NE(action.rfind("z_threshold: 8 again", 0), 0u) << q["steps"].dump();
  }
  EXPECT_EQ(corrections, 3) << q["steps"].dump();
  EXPECT_EQ(ceilings, 1) << q["steps"].dump();
}

}  // namespace
}  // namespace quality_target_test
}  // namespace quantd
