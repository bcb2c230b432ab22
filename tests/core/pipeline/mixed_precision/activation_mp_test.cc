// Activation mixed precision (MCT's `activation` / `total` resource targets)
// on the example CNN, with imx500@4.0 widened so that every quantized output
// may take 8, 4 or 2 bits (MCT's activation-MP test TPCs do the same): the
// budget is met with the activation memory recounted by hand, the chosen
// allocation is the brute-force optimum over all activation allocations, and
// ONNX Runtime runs the exported QDQ model with the mixed activation bits.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/batch/proto_output.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/mixed_precision/activation_mp_tpc.h"
#include "tests/testing/example_model.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace actmp_test {
namespace {

namespace fs = std::filesystem;

v1::QuantizeRequest ActivationMpRequest() {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const auto& s : MakeExampleImages(8, 1)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  *r.mutable_tpc()->mutable_inline_tpc() = ActivationMpTpc();
  return r;
}

// The example CNN's activation memory by hand (1x3x16x16 input, then
// conv1+bn+relu1 8x16x16, dwconv+relu6 8x16x16, pwconv+relu2 16x16x16,
// maxpool 16x8x8 preserving relu2's grid, gap/flatten 16, fc 10, softmax 10).
// Conv outputs are fused-inner (not counted). Cuts along the node order:
//   conv1: image                     768 * 8 (the input stays 8-bit)
//   dwconv / relu1: relu1_out        2048 * b(relu1)
//   pwconv / relu6: relu6_out        2048 * b(relu6)
//   maxpool: relu2_out + pool_out    (4096 + 1024) * b(relu2)
//   gap: pool_out + gap_out          1024 * b(relu2) + 16 * b(gap)
//   flatten: gap_out + flat_out      16 * (b(gap) + b(flatten))
//   fc: flat_out + fc_out            16 * b(flatten) + 10 * b(fc)
//   softmax: fc_out + probs          10 * (b(fc) + b(softmax))
double HandActivationBytes(const std::map<std::string, int>& b) {
  auto bits = [&](const char* n) {
    auto it = b.find(n);
    return it == b.end() ? 8.0 : static_cast<double>(it->second);
  };
  const std::vector<double> cuts = {
      768 * 8.0,
      2048 * bits("relu1"),
      2048 * bits("relu6"),
      5120 * bits("relu2"),
      1024 * bits("relu2") + 16 * bits("gap"),
      16 * (bits("gap") + bits("flatten")),
      16 * bits("flatten") + 10 * bits("fc"),
      10 * (bits("fc") + bits("softmax")),
  };
  double m = 0;
  for (double c : cuts) m = std::max(m, c);
  return m / 8;
}

std::map<std::string, int> OutputBits(const v1::QuantizeResult& r) {
  std::map<std::string, int> bits;
  for (const auto& n : r.quantized_graph().nodes()) {
    if (n.activation_bits() > 0 && !n.activations().empty()) {
      bits[n.name()] = n.activation_bits();
    }
  }
  return bits;
}

const v1::QuantizationConfigOptions& OpSetOptions(
    const v1::TargetPlatformCapabilities& t, const std::string& op_set) {
  for (const auto& s : t.operator_set()) {
    if (s.name() == op_set && s.has_qc_options()) return s.qc_options();
  }
  return t.default_qco();
}

class ActivationMixedPrecisionTest : public testing::BuiltinTpcJobTest {};

TEST_F(ActivationMixedPrecisionTest, HandCountMatchesTheUniformBaseline) {
  auto result = Run(ActivationMpRequest());
  ASSERT_TRUE(result.ok()) << result.status();
  // All outputs 8-bit: the maxpool cut, (4096 + 1024) bytes.
  EXPECT_DOUBLE_EQ(result->resource_utilization().activation_memory_bytes(),
                   5120);
  EXPECT_DOUBLE_EQ(HandActivationBytes(OutputBits(*result)), 5120);
}

TEST_F(ActivationMixedPrecisionTest, ActivationBudgetIsMetByHandCount) {
  for (double fraction : {0.75, 0.5, 0.3}) {
    v1::QuantizeRequest r = ActivationMpRequest();
    r.mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_activation_memory_bytes(fraction);
    auto result = Run(r);
    ASSERT_TRUE(result.ok()) << result.status();
    const auto bits = OutputBits(*result);
    const double hand = HandActivationBytes(bits);
    EXPECT_DOUBLE_EQ(result->targets().activation_memory_bytes(),
                     fraction * 5120);
    EXPECT_LE(hand, fraction * 5120) << fraction;
    EXPECT_DOUBLE_EQ(result->resource_utilization().activation_memory_bytes(),
                     hand)
        << fraction;
    // Only the activation is restricted: every kernel keeps its 8 bits.
    for (const auto& n : result->quantized_graph().nodes()) {
      if (n.weights_bits() > 0) EXPECT_EQ(n.weights_bits(), 8) << n.name();
    }
    EXPECT_LT(bits.at("relu2"), 8) << fraction;
  }
}

// The solver's allocation against every activation allocation of the
// searched nodes, priced by the hand count and scored by the sensitivities
// the job reports (MCT's objective: their sum).
TEST_F(ActivationMixedPrecisionTest, AllocationIsTheBruteForceOptimum) {
  const v1::TargetPlatformCapabilities t = ActivationMpTpc();
  for (double fraction : {0.75, 0.5, 0.3}) {
    v1::QuantizeRequest r = ActivationMpRequest();
    const double budget = fraction * 5120;
    r.mutable_mixed_precision()->mutable_target()->set_activation_memory_bytes(
        budget);
    auto result = Run(r);
    ASSERT_TRUE(result.ok()) << result.status();
    struct Searched {
      std::string name;
      std::vector<std::pair<int, double>> options;  // (bits, sensitivity)
      double chosen = 0;
    };
    std::vector<Searched> nodes;
    double chosen_sum = 0;
    for (const auto& n : result->quantized_graph().nodes()) {
      if (n.candidate_sensitivity_size() == 0) continue;
      const auto& qco = OpSetOptions(t, n.op_set());
      ASSERT_EQ(qco.quantization_configurations_size(),
                n.candidate_sensitivity_size())
          << n.name();
      Searched s{n.name(), {}, n.candidate_sensitivity(n.candidate_index())};
      for (int k = 0; k < n.candidate_sensitivity_size(); ++k) {
        if (n.candidate_sensitivity(k) < 0) continue;
        s.options.push_back(
            {qco.quantization_configurations(k).activation_n_bits(),
             n.candidate_sensitivity(k)});
      }
      chosen_sum += s.chosen;
      nodes.push_back(s);
    }
    ASSERT_GE(nodes.size(), 4u);
    double best = INFINITY;
    std::map<std::string, int> bits;
    std::function<void(size_t, double)> enumerate = [&](size_t i, double sum) {
      if (i == nodes.size()) {
        if (HandActivationBytes(bits) <= budget) best = std::min(best, sum);
        return;
      }
      for (const auto& [b, m] : nodes[i].options) {
        bits[nodes[i].name] = b;
        enumerate(i + 1, sum + m);
      }
      bits.erase(nodes[i].name);
    };
    enumerate(0, 0);
    ASSERT_TRUE(std::isfinite(best));
    EXPECT_NEAR(chosen_sum, best, 1e-9 * (1 + best)) << fraction;
  }
}

TEST_F(ActivationMixedPrecisionTest, TotalBudgetCountsWeightsAndActivations) {
  v1::QuantizeRequest r = ActivationMpRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_total_memory_bytes(0.6);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const auto& ru = result->resource_utilization();
  EXPECT_LE(ru.total_memory_bytes(), result->targets().total_memory_bytes());
  EXPECT_DOUBLE_EQ(result->targets().total_memory_bytes(),
                   0.6 * result->baseline_8bit().total_memory_bytes());
  // The maximum cut here is the maxpool one: total = that cut + weights.
  EXPECT_DOUBLE_EQ(
      ru.total_memory_bytes(),
      HandActivationBytes(OutputBits(*result)) + ru.weights_memory_bytes());
}

TEST_F(ActivationMixedPrecisionTest, UnreachableActivationBudgetIsRejected) {
  v1::QuantizeRequest r = ActivationMpRequest();
  // With every output at 2 bits the maxpool cut still holds
  // (4096 + 1024) * 2 / 8 = 1280 bytes.
  r.mutable_mixed_precision()->mutable_target()->set_activation_memory_bytes(
      1000);
  auto result = Run(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find(
                "activation: smallest achievable 1280 > requested 1000"),
            std::string::npos)
      << result.status();
}

TEST_F(ActivationMixedPrecisionTest, OnnxRuntimeRunsTheMixedActivationQdq) {
  const char* src = std::getenv("QUANTD_SOURCE_DIR");
  const fs::path source = src != nullptr ? fs::path(src) : fs::current_path();
  if (!fs::exists(source / "tools/ort/node_modules/onnxruntime-node") ||
      std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs node and onnxruntime-node (scripts/install_ort.sh)";
  }
  v1::QuantizeRequest r = ActivationMpRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_activation_memory_bytes(0.3);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const auto bits = OutputBits(*result);
  ASSERT_EQ(bits.at("relu2"), 2);  // 5120 * 2/8 = 1280 <= 1536
  auto qdq = ImportOnnx(result->qdq_onnx());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  const std::string out_name = qdq->graph.outputs[0].name;
  auto exec = Executor::Create(*std::move(qdq));
  ASSERT_TRUE(exec.ok()) << exec.status();
  const fs::path tmp =
      fs::temp_directory_path() / absl::StrCat("actmp_ort_", getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp / "in");
  const fs::path model = tmp / "model.onnx";
  {
    std::FILE* f = std::fopen(model.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(result->qdq_onnx().data(), 1, result->qdq_onnx().size(), f);
    std::fclose(f);
  }
  const auto images = MakeExampleImages(4, 7);
  for (size_t i = 0; i < images.size(); ++i) {
    ASSERT_TRUE(
        WriteSample((tmp / "in").string(), absl::StrCat("s", i), images[i])
            .ok());
  }
  // ORT's default optimization level (QDQ fusions on).
  const std::string cmd = absl::StrCat(
      "node ", (source / "tools/ort/run_model.js").string(), " ",
      model.string(), " --inputs ", (tmp / "in").string(), " --out ",
      (tmp / "out").string(), " --threads 1 --optimization all > ",
      (tmp / "log.txt").string(), " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (size_t i = 0; i < images.size(); ++i) {
    auto ort = ReadTensorFile(
        (tmp / "out" / absl::StrCat("s", i) / (out_name + ".npy")).string());
    ASSERT_TRUE(ort.ok()) << ort.status();
    auto ours = (*exec)->Run(images[i]);
    ASSERT_TRUE(ours.ok()) << ours.status();
    const Tensor& q = ours->at(out_name);
    ASSERT_EQ(ort->shape(), q.shape());
    // Softmax probabilities: a one-step difference in the 2-bit grid of an
    // early output may move them, but not by much.
    for (int64_t k = 0; k < q.num_elements(); ++k) {
      EXPECT_NEAR(ort->data<float>()[k], q.data<float>()[k], 0.05) << i;
    }
  }
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace actmp_test
}  // namespace quantd
