// The pruning job end to end: dead channels go first and leave the output
// exact, the weights memory lands at or under the target (counted by hand),
// kept channel counts are SIMD multiples, ONNX Runtime runs the pruned
// model, and bad requests name what is missing.
#include "core/pruning/prune_job.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/datagen/data_generation.h"
#include "core/datagen/generated_calibration.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/samples.h"
#include "core/pruning/importance.h"
#include "core/pruning/output_sqnr.h"
#include "core/pruning/pruning_section.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/pruning/pruning_test_util.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;
using pruning_test::MakeRequest;
using pruning_test::RandomSamples;
using ::testing::ElementsAre;

class PruneJobTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registry_.AddBuiltins().ok()); }
  absl::StatusOr<v1::PruneResult> Run(const v1::PruneRequest& r) {
    PruneContext c;
    c.registry = &registry_;
    return RunPruneJob(r, c);
  }
  tpc::TpcRegistry registry_;
};

std::map<std::string, Tensor> RunModel(const std::string& bytes,
                                       const Tensor& x) {
  absl::StatusOr<Model> m = ImportOnnx(bytes);
  EXPECT_TRUE(m.ok()) << m.status();
  auto e = Executor::Create(*std::move(m));
  EXPECT_TRUE(e.ok()) << e.status();
  auto out = (*e)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

Tensor FirstInput(const v1::Sample& s) {
  return *TensorFromSampleProto(s.inputs(0), "x", int64_t{1} << 30);
}

TEST_F(PruneJobTest, DeadChannelsArePrunedFirstAndTheOutputIsExact) {
  const std::string model = pruning_test::DeadChannelModel();
  const auto samples = RandomSamples("x", {1, 2, 4, 4}, 3, 1);
  v1::PruneRequest r = MakeRequest(model, 2, samples);
  // Keeping 2 of 4 channels: W1 4 + b1 2 + W2 6 + b2 3 = 15 parameters.
  r.set_weights_memory_bytes(60);
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->layers_size(), 1);
  EXPECT_EQ(result->layers(0).kept(), 2);
  EXPECT_EQ(std::vector<int64_t>(result->layers(0).removed_channels().begin(),
                                 result->layers(0).removed_channels().end()),
            (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(result->weights_memory_before(), 27 * 4);
  EXPECT_EQ(result->weights_memory_after(), 60);
  EXPECT_TRUE(std::isinf(result->output_sqnr_db()));
  // Independent of the job's own SQNR: the executor on both files.
  for (const v1::Sample& s : samples) {
    const Tensor x = FirstInput(s);
    const Tensor a = RunModel(model, x).at("y");
    const Tensor b = RunModel(result->pruned_onnx(), x).at("y");
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
    }
  }
}

TEST_F(PruneJobTest, MemoryIsAtOrUnderTheTargetAndCountsAreSimdMultiples) {
  const auto samples = RandomSamples("x", {1, 3, 6, 6}, 2, 2);
  v1::PruneRequest r = MakeRequest(pruning_test::ChainModel(), 4, samples);
  r.set_weights_memory_fraction(0.7);
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  // 533 parameters (pruning_section_test) -> target floor(0.7 * 2132).
  EXPECT_EQ(result->weights_memory_before(), 2132);
  EXPECT_EQ(result->weights_memory_target(), 1492);
  EXPECT_LE(result->weights_memory_after(), 1492);
  ASSERT_EQ(result->layers_size(), 3);
  for (const v1::LayerPruning& l : result->layers()) {
    EXPECT_EQ(l.kept() % 4, 0) << l.node();
    EXPECT_GT(l.kept(), 0) << l.node();
  }
  // Count the pruned file's float parameters by hand from its shapes:
  // w1 k*27, b1 k, BN 4k, w2 m*k, b2 m, scale m, w3 4m, g1 4n, g1b n,
  // g2 5n, g2b 5 with k, m, n the kept counts.
  const int64_t k = result->layers(0).kept(), m = result->layers(1).kept(),
                n = result->layers(2).kept();
  const int64_t params =
      k * 27 + k + 4 * k + m * k + m + m + 4 * m + 4 * n + n + 5 * n + 5;
  EXPECT_EQ(result->weights_memory_after(), params * 4);
  absl::StatusOr<Model> pruned = ImportOnnx(result->pruned_onnx());
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(pruned->graph.FindInitializer("w2")->shape(),
            (std::vector<int64_t>{m, k, 1, 1}));
  EXPECT_EQ(pruned->graph.FindInitializer("g2")->shape(),
            (std::vector<int64_t>{5, n}));
  EXPECT_TRUE(std::isfinite(result->output_sqnr_db()));  // channels lost
}

TEST_F(PruneJobTest, OnnxRuntimeRunsThePrunedModel) {
  const fs::path source = std::getenv("QUANTD_SOURCE_DIR") != nullptr
                              ? fs::path(std::getenv("QUANTD_SOURCE_DIR"))
                              : fs::current_path();
  if (!fs::exists(source / "tools/ort/node_modules/onnxruntime-node") ||
      std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs node and onnxruntime-node (scripts/install_ort.sh)";
  }
  const auto samples = RandomSamples("x", {1, 3, 6, 6}, 1, 3);
  v1::PruneRequest r = MakeRequest(pruning_test::ChainModel(), 4, samples);
  r.set_weights_memory_fraction(0.6);
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const fs::path tmp =
      fs::temp_directory_path() / absl::StrCat("prune_ort_", getpid());
  fs::create_directories(tmp / "in");
  const fs::path model = tmp / "pruned.onnx";
  {
    std::FILE* f = std::fopen(model.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(result->pruned_onnx().data(), 1, result->pruned_onnx().size(),
                f);
    std::fclose(f);
  }
  const Tensor x = FirstInput(samples[0]);
  ASSERT_TRUE(WriteSample((tmp / "in").string(), "s0", {{"x", x}}).ok());
  const std::string cmd =
      absl::StrCat("node ", (source / "tools/ort/run_model.js").string(), " ",
                   model.string(), " --inputs ", (tmp / "in").string(),
                   " --out ", (tmp / "out").string(), " > /dev/null 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<Tensor> ort = ReadTensorFile((tmp / "out/s0/y.npy").string());
  ASSERT_TRUE(ort.ok()) << ort.status();
  const Tensor ours = RunModel(result->pruned_onnx(), x).at("y");
  ASSERT_EQ(ort->shape(), ours.shape());
  for (int64_t i = 0; i < ours.num_elements(); ++i) {
    EXPECT_NEAR(ort->data<float>()[i], ours.data<float>()[i],
                1e-4 * (1 + std::fabs(ours.data<float>()[i])))
        << i;
  }
  fs::remove_all(tmp);
}

TEST_F(PruneJobTest, TargetBelowOneSimdGroupPerLayerNamesTheMinimum) {
  v1::PruneRequest r = MakeRequest(pruning_test::DeadChannelModel(), 2,
                                   RandomSamples("x", {1, 2, 4, 4}, 1, 1));
  r.set_weights_memory_bytes(59);  // one group of 2 channels: 60 bytes
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("minimum that SIMD groups allow: "
                                           "60 bytes"),
            std::string::npos)
      << result.status();
}

TEST_F(PruneJobTest, ModelWithoutPrunableLayersIsRejected) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w", std::vector<float>(8, 1.f), {4, 2, 1, 1});
  b.AddNode("Conv", {"x", "w"}, {"y"}, "only_conv");
  b.Output("y", DType::kFloat);
  v1::PruneRequest r =
      MakeRequest(b.Serialize(), 2, RandomSamples("x", {1, 2, 4, 4}, 1, 1));
  r.set_weights_memory_fraction(0.5);
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("no prunable layers"),
            std::string::npos);
  EXPECT_NE(result.status().message().find("only_conv"), std::string::npos)
      << result.status();
}

TEST_F(PruneJobTest, MissingTargetIsInvalidArgument) {
  v1::PruneRequest r = MakeRequest(pruning_test::DeadChannelModel(), 2,
                                   RandomSamples("x", {1, 2, 4, 4}, 1, 1));
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("weights_memory_fraction"),
            std::string::npos);
}

// Fields every job RPC bounds alike, and the nested quantize request's
// fields that the pruning request supplies (set, they would be ignored).
TEST_F(PruneJobTest, OutOfRangeAndIgnoredFieldsAreNamed) {
  struct Case {
    void (*edit)(v1::PruneRequest*);
    const char* message;
  };
  const Case cases[] = {
      {[](v1::PruneRequest* r) { r->set_num_threads(-5); },
       "num_threads: -5 is not in [0, 1024]"},
      {[](v1::PruneRequest* r) { r->set_num_score_approximations(-1); },
       "num_score_approximations: -1 is not in [0, "},
      {[](v1::PruneRequest* r) { r->set_request_id(std::string(100000, 'r')); },
       "request_id: 100000 characters, at most 128"},
      {[](v1::PruneRequest* r) { r->mutable_quantize()->set_onnx_model("m"); },
       "quantize.onnx_model: set, but the pruned model is quantized"},
      {[](v1::PruneRequest* r) {
         r->mutable_quantize()->mutable_tpc()->set_name("tflite");
       },
       "quantize.tpc: set"},
      {[](v1::PruneRequest* r) {
         r->mutable_quantize()->mutable_export_options()->set_weight_storage(
             static_cast<v1::WeightStorage>(42));
       },
       "quantize.export_options.weight_storage: 42 is not a value"},
  };
  for (const Case& c : cases) {
    v1::PruneRequest r = MakeRequest(pruning_test::DeadChannelModel(), 2,
                                     RandomSamples("x", {1, 2, 4, 4}, 1, 1));
    r.set_weights_memory_fraction(0.5);
    c.edit(&r);
    const absl::Status st = ValidatePruneRequest(r, JobLimits{});
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
  }
}

TEST_F(PruneJobTest, FractionOutOfRangeIsInvalidArgument) {
  v1::PruneRequest r = MakeRequest(pruning_test::DeadChannelModel(), 2,
                                   RandomSamples("x", {1, 2, 4, 4}, 1, 1));
  r.set_weights_memory_fraction(1.5);
  EXPECT_EQ(Run(r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PruneJobTest, TpcWithoutSimdSizeNamesTheNode) {
  v1::PruneRequest r = MakeRequest(pruning_test::DeadChannelModel(), 0,
                                   RandomSamples("x", {1, 2, 4, 4}, 1, 1));
  r.set_weights_memory_fraction(0.5);
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("conv1"), std::string::npos);
  EXPECT_NE(result.status().message().find("simd_size"), std::string::npos);
}

TEST_F(PruneJobTest, UnknownMetricIsInvalidArgument) {
  v1::PruneRequest r = MakeRequest(pruning_test::DeadChannelModel(), 2,
                                   RandomSamples("x", {1, 2, 4, 4}, 1, 1));
  r.set_weights_memory_fraction(0.5);
  r.set_importance_metric("taylor");
  absl::StatusOr<v1::PruneResult> result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("lfh, magnitude"),
            std::string::npos);
}

// x [1, 2] -> MatMul A [2, 2] -> MatMul B [2, 1] -> y. Column 0 of A is
// large (|A_0|^2 = 9) but B_0 = 0.01 makes it matter little to y; column 1
// is small (1) with B_1 = 1.
std::string TwoPathModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.FloatInitializer("a", {3, 1, 0, 0}, {2, 2});
  b.FloatInitializer("b", {0.01f, 1}, {2, 1});
  b.AddNode("MatMul", {"x", "a"}, {"h"}, "m1");
  b.AddNode("MatMul", {"h", "b"}, {"y"}, "m2");
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

v1::PruneRequest TwoPathRequest(const std::string& metric) {
  std::vector<v1::Sample> samples(2);
  *samples[0].add_inputs() =
      TensorToSampleProto(Tensor::FromVector<float>({1, 2}, {1, 2}), "x");
  *samples[1].add_inputs() =
      TensorToSampleProto(Tensor::FromVector<float>({3, 0}, {1, 2}), "x");
  v1::PruneRequest r = MakeRequest(TwoPathModel(), 1, samples);
  r.set_weights_memory_bytes(12);  // one channel: A 2 + B 1 parameters
  r.set_importance_metric(metric);
  return r;
}

TEST_F(PruneJobTest, LfhKeepsTheChannelTheOutputDependsOn) {
  absl::StatusOr<v1::PruneResult> result = Run(TwoPathRequest("lfh"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->importance_metric(), "lfh");
  // Tr(H_0) * 9 / 2 = 7e-4 * 4.5 < Tr(H_1) * 1 / 2 = 3.5: channel 0 goes.
  EXPECT_THAT(result->layers(0).removed_channels(), ElementsAre(0));
}

TEST_F(PruneJobTest, MagnitudeKeepsTheLargestColumn) {
  absl::StatusOr<v1::PruneResult> result = Run(TwoPathRequest("magnitude"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->layers(0).removed_channels(), ElementsAre(1));
}

TEST_F(PruneJobTest, LfhTracesEqualTheHandDerivedHessian) {
  // y = sum_c B_c sum_k x_k A_kc: dy/dA_kc = x_k B_c for any v = +-1, so
  // Tr(H_c) = B_c^2 ||x||^2, averaged over the samples (||x||^2 = 5, 9).
  absl::StatusOr<Model> m = ImportOnnx(TwoPathModel());
  ASSERT_TRUE(m.ok());
  pruning::SectionSearch found = pruning::FindPruningSections(m->graph);
  std::vector<SampleFeeds> samples = {
      {{"x", Tensor::FromVector<float>({1, 2}, {1, 2})}},
      {{"x", Tensor::FromVector<float>({3, 0}, {1, 2})}}};
  auto traces = pruning::MakeLfhMetric()->HessianTraces(
      *m, found.sections, samples, pruning::ImportanceContext{});
  ASSERT_TRUE(traces.ok()) << traces.status();
  const double b0 = 0.01f;  // as stored
  EXPECT_NEAR((*traces)[0][0], b0 * b0 * 7, 1e-6 * b0 * b0 * 7);
  EXPECT_NEAR((*traces)[0][1], 7, 1e-6 * 7);
}

TEST_F(PruneJobTest, QuantizeOptionQuantizesThePrunedModel) {
  const auto samples = RandomSamples("x", {1, 3, 6, 6}, 2, 4);
  v1::PruneRequest r = MakeRequest(pruning_test::ChainModel(), 4, samples);
  r.set_weights_memory_fraction(0.7);
  r.mutable_quantize();  // default settings
  absl::StatusOr<v1::PruneResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_quantized());
  EXPECT_FALSE(result->quantized().qdq_onnx().empty());
  // The quantized model has the pruned shapes.
  absl::StatusOr<Model> q = ImportOnnx(result->quantized().qdq_onnx());
  ASSERT_TRUE(q.ok()) << q.status();
  int64_t gemm2_inputs = -1;
  for (const auto& [name, t] : q->graph.initializers) {
    if (t.rank() == 2 && t.dim(0) == 5) gemm2_inputs = t.dim(1);
  }
  EXPECT_EQ(gemm2_inputs, result->layers(2).kept());
}

v1::GeneratedCalibration SmallGeneration() {
  v1::GeneratedCalibration g;
  g.set_count(3);
  g.set_iterations(4);
  g.set_learning_rate(0.05);
  g.set_extra_pixels(1);
  g.set_seed(11);
  return g;
}

// generated_calibration: the job prunes as it does when sent the very images
// data generation makes from the same options (generated here, apart).
TEST_F(PruneJobTest, GeneratedCalibrationPrunesAsTheSameImagesSent) {
  const std::string model = pruning_test::ChainModel();
  v1::PruneRequest generated = MakeRequest(model, 4, {});
  generated.set_weights_memory_fraction(0.6);
  *generated.mutable_generated_calibration() = SmallGeneration();
  absl::StatusOr<v1::PruneResult> got = Run(generated);
  ASSERT_TRUE(got.ok()) << got.status();

  auto options =
      datagen::DataGenOptionsFromGeneratedCalibration(SmallGeneration());
  ASSERT_TRUE(options.ok()) << options.status();
  auto imported = ImportOnnx(model);
  ASSERT_TRUE(imported.ok()) << imported.status();
  auto images = datagen::GenerateData(
      std::make_shared<const Model>(*std::move(imported)), *options, {});
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_EQ(images->samples.size(), 3u);
  v1::PruneRequest sent = MakeRequest(model, 4, {});
  sent.set_weights_memory_fraction(0.6);
  for (const Tensor& t : images->samples) {
    *sent.add_calibration_samples()->add_inputs() =
        TensorToSampleProto(t, images->input_name);
  }
  absl::StatusOr<v1::PruneResult> want = Run(sent);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(got->pruned_onnx(), want->pruned_onnx());
  EXPECT_EQ(got->output_sqnr_db(), want->output_sqnr_db());
  EXPECT_LT(got->weights_memory_after(), got->weights_memory_before());
}

TEST_F(PruneJobTest, GeneratedCalibrationWithSamplesIsInvalidArgument) {
  v1::PruneRequest r = MakeRequest(pruning_test::ChainModel(), 4,
                                   RandomSamples("x", {1, 3, 6, 6}, 1, 1));
  r.set_weights_memory_fraction(0.6);
  *r.mutable_generated_calibration() = SmallGeneration();
  absl::StatusOr<v1::PruneResult> result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              ::testing::HasSubstr("generated_calibration"));
}

// Outputs that overflow to Inf make the SQNR undefined (Inf - Inf is NaN,
// and a NaN noise would read as +inf dB, "identical"): the evaluation fails
// naming its stage.
TEST(OutputSqnrTest, NonFiniteOutputsFailNamingTheStage) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2});
  b.FloatInitializer("k", {3e38f}, {1});
  b.AddNode("Mul", {"x", "k"}, {"m"});
  b.AddNode("Mul", {"m", "k"}, {"y"});
  b.Output("y", DType::kFloat);
  auto model = ImportOnnx(b.Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<SampleFeeds> samples = {
      {{"x", Tensor::FromVector<float>({1.0f, -2.0f}, {1, 2})}}};
  auto sqnr = pruning::OutputSqnrDb(*model, *model, samples, nullptr, nullptr);
  EXPECT_EQ(sqnr.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(sqnr.status().message().find("evaluate: the output SQNR is "
                                         "undefined"),
            std::string::npos)
      << sqnr.status();
}

}  // namespace
}  // namespace quantd
