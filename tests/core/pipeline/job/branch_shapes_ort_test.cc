// A model like silero_vad: one If on the sample rate whose branches each
// take one input length, and a dead branch with a Squeeze that only holds at
// other sizes. Its QDQ export must load and run in ONNX Runtime at the
// calibration shape and at another batch, like the float model does.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;

void Int64Constant(OnnxModelBuilder* b, const std::string& name,
                   const std::vector<int64_t>& values,
                   std::vector<int64_t> shape) {
  b->AddNode("Constant", {}, {name})
      .TensorAttr("value", Tensor::FromVector<int64_t>(values, shape));
}

void Weight(OnnxModelBuilder* b, const std::string& name) {
  b->AddNode("Constant", {}, {name})
      .TensorAttr("value",
                  Tensor::FromVector<float>(
                      {0.5f, -1.0f, 0.25f, 1.5f, 0.75f, -0.5f}, {2, 3}));
}

// x[n, l], sr -> y. sr == 16000: y = Relu(x @ W) (l must be 2). Otherwise
// u = Reshape(x, [n, 1, l]); u = Shape(u)[2] == 1 ? Squeeze(u, 2) : u;
// y = Relu(u @ W): at l = 2 the Squeeze branch is dead, and invalid.
std::string BranchModel() {
  OnnxModelBuilder inner_then, inner_else, then_b, else_b, b;
  Int64Constant(&inner_then, "ia", {2}, {1});
  inner_then.AddNode("Squeeze", {"u", "ia"}, {"sq"});
  inner_then.Output("sq", DType::kFloat);
  inner_else.AddNode("Identity", {"u"}, {"id"});
  inner_else.Output("id", DType::kFloat);

  Weight(&then_b, "w1");
  then_b.AddNode("MatMul", {"x", "w1"}, {"r"});
  then_b.Output("r", DType::kFloat);

  Int64Constant(&else_b, "us", {0, 1, -1}, {3});
  else_b.AddNode("Reshape", {"x", "us"}, {"u"});
  else_b.AddNode("Shape", {"u"}, {"sh"});
  Int64Constant(&else_b, "g", {2}, {1});
  else_b.AddNode("Gather", {"sh", "g"}, {"l"});
  Int64Constant(&else_b, "one", {1}, {1});
  else_b.AddNode("Equal", {"l", "one"}, {"c1"});
  Int64Constant(&else_b, "z", {0}, {1});
  else_b.AddNode("Squeeze", {"c1", "z"}, {"c"});
  else_b.AddNode("If", {"c"}, {"ui"}, "last_dim_if")
      .GraphAttr("then_branch", inner_then.Build().graph())
      .GraphAttr("else_branch", inner_else.Build().graph());
  Weight(&else_b, "w2");
  else_b.AddNode("MatMul", {"ui", "w2"}, {"eo"});
  else_b.Output("eo", DType::kFloat);

  b.Input("x", DType::kFloat, {-1, -1});
  b.Input("sr", DType::kInt64, {});
  Int64Constant(&b, "k16", {16000}, {});
  b.AddNode("Equal", {"sr", "k16"}, {"cond"});
  b.AddNode("If", {"cond"}, {"o"}, "sample_rate_if")
      .GraphAttr("then_branch", then_b.Build().graph())
      .GraphAttr("else_branch", else_b.Build().graph());
  b.AddNode("Relu", {"o"}, {"y"});
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

// x[n, 2] from a fixed sequence (calibration and evaluation rows alike).
Tensor Rows(int n, int offset) {
  Tensor x(DType::kFloat, {n, 2});
  for (int i = 0; i < 2 * n; ++i) {
    x.mutable_data<float>()[i] = std::fmod(0.37f * (i + offset), 1.0f);
  }
  return x;
}

Tensor Rate(int64_t sr) { return Tensor::FromVector<int64_t>({sr}, {}); }

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// ORT's y for every sample of `inputs`, or empty if the model did not run.
std::map<std::string, std::vector<float>> RunOrt(
    const fs::path& source, const fs::path& model, const fs::path& inputs,
    const fs::path& out, const std::vector<std::string>& samples) {
  const std::string cmd =
      absl::StrCat("node ", (source / "tools/ort/run_model.js").string(), " ",
                   model.string(), " --inputs ", inputs.string(), " --out ",
                   out.string(), " > ", out.string(), ".log 2>&1");
  std::map<std::string, std::vector<float>> ys;
  if (std::system(cmd.c_str()) != 0) return ys;
  for (const std::string& s : samples) {
    auto y = ReadTensorFile((out / s / "y.npy").string());
    if (!y.ok()) return {};
    auto span = y->span<float>();
    ys[s] = std::vector<float>(span.begin(), span.end());
  }
  return ys;
}

TEST(BranchShapesOrt, QdqModelRunsInOnnxRuntimeAtTheDeclaredShapes) {
  const char* src = std::getenv("QUANTD_SOURCE_DIR");
  const fs::path source = src != nullptr ? fs::path(src) : fs::current_path();
  if (!fs::exists(source / "tools/ort/node_modules/onnxruntime-node") ||
      std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs node and onnxruntime-node (scripts/install_ort.sh)";
  }
  v1::QuantizeRequest r;
  r.set_onnx_model(BranchModel());
  for (int i = 0; i < 8; ++i) {  // both rates, at the one shape [1, 2]
    v1::Sample* p = r.add_calibration_samples();
    *p->add_inputs() = TensorToSampleProto(Rows(1, 2 * i), "x");
    *p->add_inputs() = TensorToSampleProto(Rate(i % 2 ? 8000 : 16000), "sr");
  }
  r.mutable_tpc()->set_name("imx500@5.0");
  tpc::TpcRegistry registry;
  ASSERT_TRUE(registry.AddBuiltins().ok());
  JobContext ctx;
  ctx.registry = &registry;
  auto result = RunQuantizeJob(r, ctx);
  ASSERT_TRUE(result.ok()) << result.status();

  const fs::path dir = fs::temp_directory_path() /
                       absl::StrCat("branch_shapes_ort_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  WriteFile(dir / "float.onnx", r.onnx_model());
  WriteFile(dir / "qdq.onnx", result->qdq_onnx());
  // The calibration shape at both rates, and a batch of 3 (calibration
  // rows, so no value is outside the calibrated range).
  const std::map<std::string, std::pair<Tensor, int64_t>> cases = {
      {"b1_16k", {Rows(1, 0), 16000}},
      {"b1_8k", {Rows(1, 2), 8000}},
      {"b3_16k", {Rows(3, 0), 16000}},
      {"b3_8k", {Rows(3, 2), 8000}}};
  std::vector<std::string> names;
  for (const auto& [name, c] : cases) {
    ASSERT_TRUE(WriteSample((dir / "in").string(), name,
                            {{"x", c.first}, {"sr", Rate(c.second)}})
                    .ok());
    names.push_back(name);
  }
  const auto expected =
      RunOrt(source, dir / "float.onnx", dir / "in", dir / "float", names);
  const auto actual =
      RunOrt(source, dir / "qdq.onnx", dir / "in", dir / "qdq", names);
  fs::remove_all(dir);
  ASSERT_EQ(expected.size(), names.size()) << "the float model did not run";
  ASSERT_EQ(actual.size(), names.size()) << "the QDQ model did not run";
  // y = Relu(x @ W) with x in [0, 1): |y| < 2.25, so an 8-bit grid step is
  // below 2.25 / 255 < 0.009; one step of tolerance.
  for (const std::string& s : names) {
    ASSERT_EQ(actual.at(s).size(), expected.at(s).size()) << s;
    for (size_t i = 0; i < expected.at(s).size(); ++i) {
      EXPECT_NEAR(actual.at(s)[i], expected.at(s)[i], 0.009)
          << s << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace quantd
