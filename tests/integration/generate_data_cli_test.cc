// `quantctl generate-data --server`: the streamed images land in --out as
// the same sample set, file for file, as the in-process generation.
// `quantctl quantize --calib generated:N --server`: the server generates the
// calibration images inside the job and writes the same QDQ model.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/sample_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/server_process.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

namespace fs = std::filesystem;

struct GenerateCliRun {
  int code = -1;
  std::string output;
};

GenerateCliRun RunQuantctl(const std::string& verb,
                           std::vector<std::string> args) {
  args.insert(args.begin(), {BuildPath("clients/quantctl/quantctl"), verb});
  auto child = Subprocess::Start(args);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return {};
  auto code = (*child)->Wait(absl::Seconds(60));
  EXPECT_TRUE(code.ok()) << code.status();
  return {code.ok() ? *code : -1, (*child)->Output()};
}

GenerateCliRun RunGenerateDataCli(std::vector<std::string> args) {
  return RunQuantctl("generate-data", std::move(args));
}

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// x [1, 2, 6, 6] -> Conv 3x3 (3) -> BatchNormalization -> Relu -> y.
class GenerateDataCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("gendata_cli_", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    OnnxModelBuilder b(13);
    b.Input("x", DType::kFloat, {1, 2, 6, 6});
    std::vector<float> w(3 * 2 * 3 * 3);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.04f * ((i * 5) % 9) - 0.2f;
    b.FloatInitializer("w", w, {3, 2, 3, 3});
    b.FloatInitializer("scale", {1.0f, 0.8f, 1.2f}, {3});
    b.FloatInitializer("bias", {0.0f, 0.1f, -0.1f}, {3});
    b.FloatInitializer("mean", {0.2f, -0.1f, 0.0f}, {3});
    b.FloatInitializer("var", {0.5f, 1.2f, 0.9f}, {3});
    b.AddNode("Conv", {"x", "w"}, {"c"}).Ints("pads", {1, 1, 1, 1});
    b.AddNode("BatchNormalization", {"c", "scale", "bias", "mean", "var"},
              {"bn"});
    b.AddNode("Relu", {"bn"}, {"y"});
    b.Output("y", DType::kFloat);
    std::ofstream((dir_ / "model.onnx").string(), std::ios::binary)
        << b.Serialize();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Args(const std::string& out) {
    return {(dir_ / "model.onnx").string(),
            "--count",
            "3",
            "--batch-size",
            "2",
            "--iterations",
            "4",
            "--lr",
            "0.1",
            "--extra-pixels",
            "2",
            "--input-min",
            "-1",
            "--input-max",
            "1",
            "--seed",
            "5",
            "--out",
            (dir_ / out).string(),
            "--quiet"};
  }
  fs::path dir_;
};

TEST_F(GenerateDataCliTest, ServerWritesTheSameSampleSetAsInProcess) {
  auto server = ServerProcess::Start({"--workers=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::string> remote = Args("remote");
  remote.insert(remote.end(), {"--server", (*server)->target()});
  const GenerateCliRun on_server = RunGenerateDataCli(remote);
  ASSERT_EQ(on_server.code, 0) << on_server.output;
  const GenerateCliRun local = RunGenerateDataCli(Args("local"));
  ASSERT_EQ(local.code, 0) << local.output;
  auto set = ReadSampleSet((dir_ / "remote").string(), {"x"});
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->size(), 3u);
  for (const std::string& name : set->names) {
    const std::string file = FileBytes(dir_ / "remote" / name / "x.npy");
    EXPECT_FALSE(file.empty());
    EXPECT_EQ(file, FileBytes(dir_ / "local" / name / "x.npy")) << name;
  }
}

TEST_F(GenerateDataCliTest,
       QuantizeWithGeneratedCalibrationOnServerEqualsInProcess) {
  auto server = ServerProcess::Start({"--workers=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  const auto args = [&](const std::string& out) {
    return std::vector<std::string>{
        (dir_ / "model.onnx").string(),
        "--tpc",
        "imx500@4.1",
        "--calib",
        "generated:3,batch=2,iterations=4,lr=0.1,range=-1:1,seed=5",
        "--out",
        (dir_ / out).string(),
        "--quiet"};
  };
  std::vector<std::string> remote = args("remote");
  remote.insert(remote.end(), {"--server", (*server)->target()});
  const GenerateCliRun on_server = RunQuantctl("quantize", remote);
  ASSERT_EQ(on_server.code, 0) << on_server.output;
  const GenerateCliRun local = RunQuantctl("quantize", args("local"));
  ASSERT_EQ(local.code, 0) << local.output;
  const std::string qdq = FileBytes(dir_ / "remote" / "model.qdq.onnx");
  EXPECT_FALSE(qdq.empty());
  EXPECT_EQ(qdq, FileBytes(dir_ / "local" / "model.qdq.onnx"));
}

// A learning rate that overflows Adam's steps, or a non-finite range,
// names its flag before any image is optimised; nothing is written.
TEST_F(GenerateDataCliTest, NonFiniteOrHugeNumbersNameTheirFlag) {
  struct Case {
    const char* flag;
    const char* value;
    const char* message;
  };
  for (const Case& c :
       {Case{"--lr", "inf", "--lr: inf is not in (0, 1000]"},
        Case{"--lr", "1e300", "--lr: 1e300 is not in"},
        Case{"--input-min", "nan", "--input-min: 'nan' is not a number"}}) {
    std::vector<std::string> args = Args("out");
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == c.flag) args[i + 1] = c.value;
    }
    const GenerateCliRun run = RunGenerateDataCli(args);
    EXPECT_NE(run.code, 0) << c.flag;
    EXPECT_THAT(run.output, ::testing::HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(dir_ / "out")) << c.flag;
  }
}

TEST_F(GenerateDataCliTest, TokenFlagWithoutServerIsAUsageError) {
  std::ofstream((dir_ / "token").string()) << "secret\n";
  std::vector<std::string> args = Args("out");
  args.insert(args.end(), {"--token-file", (dir_ / "token").string()});
  const GenerateCliRun run = RunGenerateDataCli(args);
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.output, ::testing::HasSubstr("need --server"));
}

}  // namespace
}  // namespace quantd::testing
