// `quantctl prune` end to end on files: the pruned model and the report
// land in --out, and bad targets are refused with what is wrong.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/tpc/builtins.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/server_process.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct PruneRun {
  int code = -1;
  std::string output;
};

PruneRun Prune(std::vector<std::string> args) {
  args.insert(args.begin(), {BuildPath("clients/quantctl/quantctl"), "prune"});
  auto child = Subprocess::Start(args);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return {};
  auto code = (*child)->Wait(absl::Seconds(60));
  EXPECT_TRUE(code.ok()) << code.status();
  return {code.ok() ? *code : -1, (*child)->Output()};
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A folder with model.onnx (x -> Conv 4 ch, 1 and 3 zero -> Relu -> Conv
// 3), tpc.textproto (imx500 with simd_size 2) and calib/.
class PruneCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("prune_cli_", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "calib");
    OnnxModelBuilder b(13);
    b.Input("x", DType::kFloat, {1, 2, 4, 4});
    b.FloatInitializer("w1", {1, 2, 0, 0, -1, 0.5f, 0, 0}, {4, 2, 1, 1});
    b.FloatInitializer("w2", std::vector<float>(12, 0.5f), {3, 4, 1, 1});
    b.AddNode("Conv", {"x", "w1"}, {"c1"}, "conv1");
    b.AddNode("Relu", {"c1"}, {"r1"}, "relu1");
    b.AddNode("Conv", {"r1", "w2"}, {"y"}, "conv2");
    b.Output("y", DType::kFloat);
    WriteFile(dir_ / "model.onnx", b.Serialize());
    v1::TargetPlatformCapabilities tpc = tpc::BuiltinTpcs()[0].tpc;
    auto edit = [](v1::QuantizationConfigOptions* qco) {
      qco->mutable_base_config()->set_simd_size(2);
      for (auto& c : *qco->mutable_quantization_configurations()) {
        c.set_simd_size(2);
      }
    };
    edit(tpc.mutable_default_qco());
    for (auto& set : *tpc.mutable_operator_set()) {
      if (set.has_qc_options()) edit(set.mutable_qc_options());
    }
    std::string text;
    google::protobuf::TextFormat::PrintToString(tpc, &text);
    WriteFile(dir_ / "tpc.textproto", text);
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = 0.1f * (i % 5) - 0.2f;
    ASSERT_TRUE(WriteSample((dir_ / "calib").string(), "s0",
                            {{"x", Tensor::FromVector(x, {1, 2, 4, 4})}})
                    .ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Args(const std::string& target) {
    return {(dir_ / "model.onnx").string(),
            "--weights-memory",
            target,
            "--tpc",
            (dir_ / "tpc.textproto").string(),
            "--calib",
            (dir_ / "calib").string(),
            "--out",
            (dir_ / "out").string(),
            "--quiet"};
  }
  fs::path dir_;
};

TEST_F(PruneCliTest, WritesThePrunedModelAndTheReport) {
  // w1 8 + w2 12 parameters; 2 channels kept: 4 + 6 = 40 bytes.
  const PruneRun run = Prune(Args("40B"));
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("weights 80 -> 40 bytes"));
  absl::StatusOr<Model> m =
      ImportOnnxFile((dir_ / "out/model.pruned.onnx").string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph.FindInitializer("w2")->shape(),
            (std::vector<int64_t>{3, 2, 1, 1}));
  std::ifstream in(dir_ / "out/prune_report.json");
  std::stringstream report;
  report << in.rdbuf();
  auto j = nlohmann::json::parse(report.str());
  EXPECT_EQ(j["layers"][0]["removed_channels"], nlohmann::json::array({1, 3}));
  EXPECT_EQ(j["output_sqnr_db"], "inf");  // the removed channels were dead
}

TEST_F(PruneCliTest, UnreadableTargetIsAUsageError) {
  const PruneRun run = Prune(Args("most"));
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.output, HasSubstr("--weights-memory most"));
}

TEST_F(PruneCliTest, TargetBelowOneGroupPerLayerGivesTheMinimum) {
  const PruneRun run = Prune(Args("0.4"));  // 32 bytes < 40
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.output, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(run.output, HasSubstr("minimum that SIMD groups allow: 40"));
}

}  // namespace
}  // namespace quantd::testing
