// HMSE weights with GPTQ through the whole job (docs/gptq.md, HMSE): the
// `hessian` stage fills the scores the weights search needs, its
// cancellation, and the quality target's HMSE trial (run, or skipped with a
// note when an op on the way to the output has no backward pass).
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/graph/onnx_export.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/example_model.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace hmse_job_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

void AddSamples(const std::vector<std::map<std::string, Tensor>>& samples,
                bool evaluation, v1::QuantizeRequest* r) {
  for (const auto& s : samples) {
    v1::Sample* p =
        evaluation ? r->add_evaluation_samples() : r->add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
}

// The example CNN with GPTQ (one short epoch) and HMSE weights.
v1::QuantizeRequest HmseRequest() {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  AddSamples(MakeExampleImages(16, 1), false, &r);
  AddSamples(MakeExampleImages(8, 2), true, &r);
  r.mutable_tpc()->set_name("imx500@4.0");
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_n_epochs(1);
  r.mutable_quantization()->set_weights_error_method(v1::ERROR_METHOD_HMSE);
  return r;
}

// Records stages and messages; cancels `cancel_at`'s stage when it starts.
class Recorder : public ProgressSink {
 public:
  explicit Recorder(CancellationToken* token = nullptr,
                    std::string cancel_at = "")
      : token_(token), cancel_at_(std::move(cancel_at)) {}
  void Report(const Progress& p) override {
    absl::MutexLock l(&mu_);
    stages_.push_back(p.stage);
    messages_.push_back(p.message);
    if (token_ != nullptr && p.stage == cancel_at_) token_->Cancel();
  }
  std::vector<std::string> stages() {
    absl::MutexLock l(&mu_);
    return stages_;
  }
  std::vector<std::string> messages() {
    absl::MutexLock l(&mu_);
    return messages_;
  }

 private:
  absl::Mutex mu_;
  CancellationToken* token_;
  std::string cancel_at_;
  std::vector<std::string> stages_, messages_;
};

class HmseJobTest : public testing::BuiltinTpcJobTest {
 protected:
  // Runs `r` (GPTQ on) at an 80 dB target, out of any 8-bit model's reach:
  // the job ends FAILED_PRECONDITION after GPTQ. The progress messages.
  std::vector<std::string> RunUnreachableTarget(v1::QuantizeRequest r) {
    r.mutable_quality_target()->set_metric(v1::QualityTarget::METRIC_SQNR);
    r.mutable_quality_target()->set_value(80);
    Recorder sink;
    auto result = Run(r, {.sink = &sink});
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition)
        << result.status();
    return sink.messages();
  }
};

TEST_F(HmseJobTest, GptqWithHmseWeightsRunsEndToEnd) {
  Recorder sink;
  auto result = Run(HmseRequest(), {.sink = &sink});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(sink.stages(), ::testing::Contains("hessian"));
  EXPECT_GT(result->output_sqnr_db(), 10.0);
}

TEST_F(HmseJobTest, HmseThresholdsDoNotDependOnTheThreadCount) {
  const v1::QuantizeRequest r = HmseRequest();
  ThreadPool pool(2);
  auto serial = Run(r);
  auto parallel = Run(r, {.pool = &pool});
  ASSERT_TRUE(serial.ok()) << serial.status();
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_EQ(serial->qdq_onnx(), parallel->qdq_onnx());
}

TEST_F(HmseJobTest, CancellationStopsTheHessianStage) {
  CancellationToken cancel;
  Recorder sink(&cancel, "hessian");
  auto result = Run(HmseRequest(), {.sink = &sink, .cancel = &cancel});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
  EXPECT_EQ(sink.stages().back(), "hessian");
}

TEST_F(HmseJobTest, TargetWithGptqTriesHmseInsteadOfFailing) {
  v1::QuantizeRequest r = HmseRequest();
  r.mutable_quantization()->clear_weights_error_method();
  EXPECT_THAT(RunUnreachableTarget(r),
              ::testing::Contains(HasSubstr("weights_error_method: HMSE")));
}

// y = Erf(x W^T): Erf has no backward pass, so HMSE cannot be scored.
v1::QuantizeRequest ErfRequest() {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> w(16 * 16);
  for (float& v : w) v = normal(rng);
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 16});
  b.Initializer("w", Tensor::FromVector<float>(w, {16, 16}));
  b.AddNode("Gemm", {"x", "w"}, {"g"}, "fc").Int("transB", 1);
  b.AddNode("Erf", {"g"}, {"y"}, "erf");
  b.Output("y", DType::kFloat);
  v1::QuantizeRequest r;
  r.set_onnx_model(b.Serialize());
  std::vector<std::map<std::string, Tensor>> samples;
  for (int s = 0; s < 8; ++s) {
    std::vector<float> x(16);
    for (float& v : x) v = normal(rng) * 3;
    samples.push_back({{"x", Tensor::FromVector<float>(x, {1, 16})}});
  }
  AddSamples(samples, false, &r);
  r.mutable_tpc()->set_name("imx500@4.0");
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_n_epochs(1);
  return r;
}

TEST_F(HmseJobTest, ExplicitHmseOnAnOpWithoutGradientNamesTheNode) {
  v1::QuantizeRequest r = ErfRequest();
  r.mutable_quantization()->set_weights_error_method(v1::ERROR_METHOD_HMSE);
  auto result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(result.status().message(), HasSubstr("'erf' (Erf)"));
}

TEST_F(HmseJobTest, TargetSkipsTheHmseTrialWhenAnOpHasNoGradient) {
  EXPECT_THAT(RunUnreachableTarget(ErfRequest()),
              ::testing::Contains(
                  AllOf(HasSubstr("HMSE skipped"), HasSubstr("'erf' (Erf)"))));
}

}  // namespace
}  // namespace hmse_job_test
}  // namespace quantd
