// GPTQ inside a whole job on the example CNN (W4A8, imx500@4.0): trained
// integers reach the QuantizedGraph, the report lists every trained layer,
// progress names blocks and epochs, cancellation stops the stage.
#include <random>
#include <string>
#include <vector>

#include "core/graph/onnx_export.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/checker.h"
#include "onnx/onnx_pb.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/example_model.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace {

v1::QuantizeRequest Request(bool gptq) {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const auto& s : MakeExampleImages(8, 1)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.0");
  r.mutable_mixed_precision()->set_kernel_weights_bits(4);
  r.mutable_export_options()->set_skip_qdq_onnx(true);
  if (gptq) {
    r.mutable_gptq()->set_enabled(true);
    r.mutable_gptq()->set_n_epochs(2);
    r.mutable_gptq()->set_rows_per_block(512);
  }
  return r;
}

class RecordingSink : public ProgressSink {
 public:
  explicit RecordingSink(CancellationToken* cancel_on_gptq = nullptr)
      : cancel_(cancel_on_gptq) {}
  void Report(const Progress& p) override {
    if (p.stage != "gptq") return;
    messages.push_back(p.message);
    if (cancel_ != nullptr) cancel_->Cancel();
  }
  std::vector<std::string> messages;

 private:
  CancellationToken* cancel_;
};

class GptqJobTest : public testing::BuiltinTpcJobTest {};

// n values of N(0, 1) a call, from a seeded generator.
class NormalValues {
 public:
  explicit NormalValues(uint32_t seed) : rng_(seed) {}
  std::vector<float> operator()(int n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal_(rng_);
    return v;
  }

 private:
  std::mt19937 rng_;
  std::normal_distribution<float> normal_;
};

TEST_F(GptqJobTest, TrainedIntegersReachTheQuantizedGraphAndReport) {
  auto ptq = Run(Request(false));
  ASSERT_TRUE(ptq.ok()) << ptq.status();
  RecordingSink sink;
  auto gptq = Run(Request(true), {.sink = &sink});
  ASSERT_TRUE(gptq.ok()) << gptq.status();
  const auto report = nlohmann::json::parse(gptq->report_json());
  int trained = 0, applied = 0;
  for (const auto& l : report["layers"]) {
    if (!l.contains("gptq_sqnr_before_db")) continue;
    ++trained;
    if (l["gptq_applied"].get<bool>()) {
      ++applied;
      EXPECT_GT(l["gptq_sqnr_after_db"].get<double>(),
                l["gptq_sqnr_before_db"].get<double>());
    }
  }
  // Four kernels: stem Conv, depthwise Conv, 1x1 Conv, Gemm.
  EXPECT_EQ(trained, 4);
  ASSERT_GT(applied, 0);
  // Some kernel's integers differ from PTQ's nearest rounding.
  int changed = 0;
  ASSERT_EQ(ptq->quantized_graph().nodes_size(),
            gptq->quantized_graph().nodes_size());
  for (int i = 0; i < ptq->quantized_graph().nodes_size(); ++i) {
    const auto& a = ptq->quantized_graph().nodes(i);
    const auto& b = gptq->quantized_graph().nodes(i);
    for (int k = 0; k < a.weights_size() && k < b.weights_size(); ++k) {
      if (a.weights(k).int_values().raw_data() !=
          b.weights(k).int_values().raw_data()) {
        ++changed;
      }
    }
  }
  EXPECT_GT(changed, 0);
  // Progress per block and epoch.
  bool epoch_seen = false;
  for (const auto& m : sink.messages) {
    epoch_seen |= m.find("epoch 2/2") != std::string::npos;
  }
  EXPECT_TRUE(epoch_seen);
}

TEST_F(GptqJobTest, CancellationStopsTheStage) {
  CancellationToken cancel;
  RecordingSink sink(&cancel);  // cancels at the first GPTQ progress
  auto result = Run(Request(true), {.sink = &sink, .cancel = &cancel});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(sink.messages.empty());
}

// x[1,2,8] -> MatMul(w[8,6]) -> Add(b) -> Relu -> y, with GPTQ: the trained
// MatMul keeps ONNX's two inputs (ppocr_rec's attention MatMuls once got a
// third, a bias input, and ONNX Runtime refused the QDQ model), and the
// QDQ model passes ONNX's own checker.
TEST_F(GptqJobTest, TrainedMatMulStaysAValidOnnxMatMul) {
  NormalValues random(5);
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 8});
  b.FloatInitializer("w", random(48), {8, 6});
  b.FloatInitializer("b", random(6), {6});
  b.AddNode("MatMul", {"x", "w"}, {"m"}, "matmul");
  b.AddNode("Add", {"m", "b"}, {"a"}, "add");
  b.AddNode("Relu", {"a"}, {"y"}, "relu");
  b.Output("y", DType::kFloat);
  v1::QuantizeRequest r;
  r.set_onnx_model(b.Serialize());
  for (int i = 0; i < 8; ++i) {
    *r.add_calibration_samples()->add_inputs() =
        TensorToSampleProto(Tensor::FromVector(random(16), {1, 2, 8}), "x");
  }
  r.mutable_tpc()->set_name("imx500@4.0");
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_n_epochs(2);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const auto report = nlohmann::json::parse(result->report_json());
  int trained = 0;
  for (const auto& l : report["layers"]) {
    trained += l.contains("gptq_sqnr_before_db");
  }
  EXPECT_EQ(trained, 1);  // the MatMul was trained
  onnx::ModelProto qdq;
  ASSERT_TRUE(qdq.ParseFromString(result->qdq_onnx()));
  int matmuls = 0;
  for (const onnx::NodeProto& n : qdq.graph().node()) {
    if (n.op_type() != "MatMul") continue;
    ++matmuls;
    EXPECT_EQ(n.input_size(), 2) << n.name();
  }
  EXPECT_EQ(matmuls, 1);
  EXPECT_NO_THROW(onnx::checker::check_model(qdq));
}

// A Conv over three spatial axes trains through the N-d patches
// (exec::WindowTaps). Oracle: the same Conv as a 2-D one (depth 1, kernel
// depth 1) takes the 2-D path, whose patches are the same columns in the
// same order: every block's figures and the trained integers agree.
TEST_F(GptqJobTest, VolumetricConvTrainsAsItsTwoDimensionalTwin) {
  NormalValues random(11);
  const std::vector<float> w1 = random(4 * 3 * 3 * 3), b1 = random(4);
  const std::vector<float> w2 = random(2 * 2 * 3 * 3);
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < 8; ++i) inputs.push_back(random(3 * 6 * 7));
  auto request = [&](bool volumetric) {
    auto shape = [&](std::vector<int64_t> s) {
      if (volumetric) s.insert(s.begin() + 2, 1);
      return s;
    };
    OnnxModelBuilder b(13);
    b.Input("x", DType::kFloat, shape({1, 3, 6, 7}));
    b.FloatInitializer("w1", w1, shape({4, 3, 3, 3}));
    b.FloatInitializer("b1", b1, {4});
    b.FloatInitializer("w2", w2, shape({2, 2, 3, 3}));
    const std::vector<int64_t> pads =
        volumetric ? std::vector<int64_t>{0, 1, 0, 0, 1, 1}
                   : std::vector<int64_t>{1, 0, 1, 1};
    b.AddNode("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1").Ints("pads", pads);
    b.AddNode("Relu", {"c1"}, {"r1"}, "relu1");
    b.AddNode("Conv", {"r1", "w2"}, {"y"}, "conv2")
        .Ints("strides", volumetric ? std::vector<int64_t>{1, 2, 1}
                                    : std::vector<int64_t>{2, 1})
        .Int("group", 2);
    b.Output("y", DType::kFloat);
    v1::QuantizeRequest r;
    r.set_onnx_model(b.Serialize());
    for (const auto& x : inputs) {
      *r.add_calibration_samples()->add_inputs() =
          TensorToSampleProto(Tensor::FromVector(x, shape({1, 3, 6, 7})), "x");
    }
    r.mutable_tpc()->set_name("imx500@4.0");
    r.mutable_mixed_precision()->set_kernel_weights_bits(4);
    r.mutable_gptq()->set_enabled(true);
    r.mutable_gptq()->set_n_epochs(2);
    return r;
  };
  auto flat = Run(request(false));
  auto volume = Run(request(true));
  ASSERT_TRUE(flat.ok()) << flat.status();
  ASSERT_TRUE(volume.ok()) << volume.status();
  const auto fl = nlohmann::json::parse(flat->report_json())["layers"];
  const auto vl = nlohmann::json::parse(volume->report_json())["layers"];
  int trained = 0;
  for (const auto& f : fl) {
    if (!f.contains("gptq_sqnr_before_db")) continue;
    ++trained;
    for (const auto& v : vl) {
      if (v["node"] != f["node"]) continue;
      ASSERT_TRUE(v.contains("gptq_sqnr_before_db")) << v["node"];
      EXPECT_NEAR(v["gptq_sqnr_before_db"].get<double>(),
                  f["gptq_sqnr_before_db"].get<double>(), 1e-9)
          << v["node"];
      EXPECT_NEAR(v["gptq_sqnr_after_db"].get<double>(),
                  f["gptq_sqnr_after_db"].get<double>(), 1e-9)
          << v["node"];
      EXPECT_EQ(v["gptq_applied"], f["gptq_applied"]) << v["node"];
    }
  }
  EXPECT_EQ(trained, 2);
  auto integers = [](const v1::QuantizeResult& r, const std::string& node) {
    for (const auto& n : r.quantized_graph().nodes()) {
      if (n.name() != node) continue;
      for (const auto& w : n.weights()) {
        if (w.attr() == "kernel_attr") return w.int_values().raw_data();
      }
    }
    return std::string();
  };
  for (const char* node : {"conv1", "conv2"}) {
    const std::string f = integers(*flat, node);
    EXPECT_FALSE(f.empty()) << node;
    EXPECT_EQ(f, integers(*volume, node)) << node;
  }
}

}  // namespace
}  // namespace quantd
