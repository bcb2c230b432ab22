// A TPC that leaves a Conv's weights float must get float weights in ONNX
// Runtime at its default level, where the WeightBiasQuantization transformer
// would otherwise quantize them to per-tensor int8
// (core/pipeline/export/float_weight_guard.h). Oracle: the same model in
// ORT with optimizations off.
#include "core/pipeline/export/float_weight_guard.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/qdq/qdq_export.h"
#include "core/qdq/qdq_math.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace float_weight_guard_test {
namespace {

namespace fs = std::filesystem;

constexpr float kOutScale = 1.0f / 256;

// x[1,2,5,5] -> depthwise 3x3 Conv (channel 0 weights about 2, channel 1
// about 0.02: per-tensor int8 leaves channel 1 one or two steps) -> Relu.
Model DepthwiseModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 5, 5});
  std::vector<float> w(18);
  for (int i = 0; i < 9; ++i) {
    w[i] = 1.5f + 0.1f * i;
    w[9 + i] = 0.011f + 0.0023f * i;
  }
  b.FloatInitializer("w", w, {2, 1, 3, 3});
  b.AddNode("Conv", {"x", "w"}, {"c"}, "conv").Int("group", 2);
  b.AddNode("Relu", {"c"}, {"y"}, "relu");
  b.Output("y", DType::kFloat);
  auto model = ImportOnnxModel(b.Build());
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

// x[1,1,5,6] -> Conv 3x3 with one input channel and two output channels
// (the same spread of weights as above) -> Relu: a per-channel scale on the
// input channel has one element, which ORT takes as per-tensor.
Model SingleChannelModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 5, 6});
  std::vector<float> w(18);
  for (int i = 0; i < 9; ++i) {
    w[i] = 1.5f + 0.1f * i;
    w[9 + i] = 0.011f + 0.0023f * i;
  }
  b.FloatInitializer("w", w, {2, 1, 3, 3});
  b.AddNode("Conv", {"x", "w"}, {"c"}, "conv");
  b.AddNode("Relu", {"c"}, {"y"}, "relu");
  b.Output("y", DType::kFloat);
  auto model = ImportOnnxModel(b.Build());
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

// Activations quantized, weights float (as tflite's Conv).
QdqPlan FloatWeightPlan() {
  QdqPlan plan;
  plan.activations.push_back({"x", *StorageForBits(8, false), 1.0f / 256, 0});
  plan.activations.push_back({"y", *StorageForBits(8, false), kOutScale, 0});
  return plan;
}

const Node* ConsumerOf(const Model& m, const std::string& op_type) {
  for (const Node& n : m.graph.nodes) {
    if (n.op_type == op_type) return &n;
  }
  return nullptr;
}

TEST(FloatWeightGuard, ConvInputDequantizesPerChannelWithTheSameScale) {
  QdqPlan plan = FloatWeightPlan();
  GuardFloatWeights(DepthwiseModel().graph, &plan);
  auto qdq = BuildQdqModel(DepthwiseModel(), plan);
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  const Node* conv = ConsumerOf(*qdq, "Conv");
  ASSERT_NE(conv, nullptr);
  // The weight stays a float initializer.
  EXPECT_NE(qdq->graph.FindInitializer(conv->Input(1)), nullptr);
  const Node* dq = nullptr;
  for (const Node& n : qdq->graph.nodes) {
    if (!n.outputs.empty() && n.outputs[0] == conv->Input(0)) dq = &n;
  }
  ASSERT_NE(dq, nullptr);
  ASSERT_EQ(dq->op_type, "DequantizeLinear");
  EXPECT_EQ(dq->GetInt("axis", -99), 1);
  const Tensor* scale = qdq->graph.FindInitializer(dq->Input(1));
  ASSERT_NE(scale, nullptr);
  ASSERT_EQ(scale->shape(), std::vector<int64_t>{2});
  EXPECT_EQ(scale->data<float>()[0], 1.0f / 256);
  EXPECT_EQ(scale->data<float>()[1], 1.0f / 256);
  const Tensor* zp = qdq->graph.FindInitializer(dq->Input(2));
  ASSERT_NE(zp, nullptr);
  EXPECT_EQ(zp->shape(), std::vector<int64_t>{2});
}

TEST(FloatWeightGuard, QuantizedWeightsKeepTheScalarDequantize) {
  QdqPlan plan = FloatWeightPlan();
  QdqWeight w;
  w.node = "conv";
  w.input_index = 1;
  w.storage = *StorageForBits(8, true);
  w.axis = 0;
  w.scales = {2.5f / 127, 0.03f / 127};
  w.int_values = Tensor(DType::kInt32, {2, 1, 3, 3});
  plan.weights.push_back(w);
  GuardFloatWeights(DepthwiseModel().graph, &plan);
  EXPECT_TRUE(plan.activations[0].per_channel_consumers.empty());
}

TEST(FloatWeightGuard, SingleInputChannelScaleGoesOnTheLastStaticAxis) {
  const Model model = SingleChannelModel();
  QdqPlan plan = FloatWeightPlan();
  GuardFloatWeights(model.graph, &plan);
  EXPECT_TRUE(
      PlaceSingleChannelGuards(model, model.graph.inputs, &plan).empty());
  using AxisAndLength = std::pair<int, int64_t>;
  EXPECT_EQ(plan.activations[0].per_channel_consumers["conv"],
            AxisAndLength(3, 6));
}

TEST(FloatWeightGuard, SingleInputChannelOnDynamicDimsStaysAndWarns) {
  const Model model = SingleChannelModel();
  std::vector<ValueInfo> declared = model.graph.inputs;
  declared[0].shape = {1, 1, -1, -1};
  declared[0].dim_params = {"", "", "h", "w"};
  QdqPlan plan = FloatWeightPlan();
  GuardFloatWeights(model.graph, &plan);
  const std::vector<std::string> warnings =
      PlaceSingleChannelGuards(model, declared, &plan);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'conv'"), std::string::npos) << warnings[0];
  using AxisAndLength = std::pair<int, int64_t>;
  EXPECT_EQ(plan.activations[0].per_channel_consumers["conv"],
            AxisAndLength(1, 1));
}

// Runs `model` in ORT at `level` on `x`; returns y.
std::vector<float> RunOrt(const fs::path& source, const fs::path& dir,
                          const std::string& model, const Tensor& x,
                          const std::string& level) {
  fs::create_directories(dir / "in");
  {
    std::FILE* f = std::fopen((dir / "m.onnx").c_str(), "wb");
    EXPECT_NE(f, nullptr);
    std::fwrite(model.data(), 1, model.size(), f);
    std::fclose(f);
  }
  EXPECT_TRUE(WriteSample((dir / "in").string(), "s0", {{"x", x}}).ok());
  const std::string cmd = absl::StrCat(
      "node ", (source / "tools/ort/run_model.js").string(), " ",
      (dir / "m.onnx").string(), " --inputs ", (dir / "in").string(), " --out ",
      (dir / level).string(), " --optimization ", level, " > ",
      (dir / "log.txt").string(), " 2>&1");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto y = ReadTensorFile((dir / level / "s0" / "y.npy").string());
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  auto s = y->span<float>();
  return std::vector<float>(s.begin(), s.end());
}

// Largest difference between ORT at its default level and ORT with
// optimizations off, in output grid steps.
double DefaultLevelDrift(const fs::path& source, const Model& model,
                         const QdqPlan& plan) {
  auto qdq = BuildQdqModel(model, plan);
  EXPECT_TRUE(qdq.ok()) << qdq.status();
  auto bytes = ExportOnnx(*qdq);
  EXPECT_TRUE(bytes.ok());
  Tensor x(DType::kFloat, model.graph.inputs[0].shape);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.mutable_data<float>()[i] = std::fmod(0.37f * i, 1.0f);
  }
  const fs::path dir = fs::temp_directory_path() /
                       absl::StrCat("float_weight_guard_", ::getpid());
  fs::remove_all(dir);
  const std::vector<float> all = RunOrt(source, dir, *bytes, x, "all");
  const std::vector<float> off = RunOrt(source, dir, *bytes, x, "disabled");
  fs::remove_all(dir);
  EXPECT_EQ(all.size(), off.size());
  double drift = 0;
  for (size_t i = 0; i < all.size() && i < off.size(); ++i) {
    drift = std::max(drift, std::fabs(double{all[i]} - off[i]) / kOutScale);
  }
  return drift;
}

// The source tree when node and onnxruntime-node are there, else empty.
fs::path OrtSource() {
  const char* src = std::getenv("QUANTD_SOURCE_DIR");
  const fs::path source = src != nullptr ? fs::path(src) : fs::current_path();
  if (!fs::exists(source / "tools/ort/node_modules/onnxruntime-node") ||
      std::system("node --version > /dev/null 2>&1") != 0) {
    return {};
  }
  return source;
}

TEST(FloatWeightGuard, OnnxRuntimeDefaultLevelKeepsTheWeightsFloat) {
  const fs::path source = OrtSource();
  if (source.empty()) {
    GTEST_SKIP() << "needs node and onnxruntime-node (scripts/install_ort.sh)";
  }
  // Without the guard ORT's int8 weights move channel 1 by grid steps: the
  // oracle can see the defect.
  const Model model = DepthwiseModel();
  EXPECT_GE(DefaultLevelDrift(source, model, FloatWeightPlan()), 3.0);
  QdqPlan guarded = FloatWeightPlan();
  GuardFloatWeights(model.graph, &guarded);
  EXPECT_EQ(DefaultLevelDrift(source, model, guarded), 0.0);
}

TEST(FloatWeightGuard, OnnxRuntimeKeepsSingleInputChannelWeightsFloat) {
  const fs::path source = OrtSource();
  if (source.empty()) {
    GTEST_SKIP() << "needs node and onnxruntime-node (scripts/install_ort.sh)";
  }
  // Unguarded, ORT moves the output by grid steps (2 here).
  const Model model = SingleChannelModel();
  EXPECT_GE(DefaultLevelDrift(source, model, FloatWeightPlan()), 1.0);
  QdqPlan guarded = FloatWeightPlan();
  GuardFloatWeights(model.graph, &guarded);
  EXPECT_TRUE(
      PlaceSingleChannelGuards(model, model.graph.inputs, &guarded).empty());
  EXPECT_EQ(DefaultLevelDrift(source, model, guarded), 0.0);
}

}  // namespace
}  // namespace float_weight_guard_test
}  // namespace quantd
