// Mixed precision on ppocr_cls (MobileNetV3 classifier) with imx500@4.1
// (kernel candidates 8/4/2 bits): at 75% and 50% of the 8-bit weight memory
// the achieved weights memory is within the target, the export carries
// mixed kernel bits (opset 21 for the 4/2-bit ones), and the held-out output
// SQNR beats the uniform all-4-bit model (50% of the 8-bit size, i.e. the
// best uniform allocation that fits either budget). SQNR oracle: quantd's
// fake-quant executor on the held-out samples (QuantizeResult.
// output_sqnr_db), which equals the exported QDQ model run by ORT within one
// quantization step (tests/e2e_ptq).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_scale.h"

namespace quantd {
namespace {

std::string CacheDir() {
  const char* v = std::getenv("QUANTD_CACHE_DIR");
  return v != nullptr && *v ? v : QUANTD_MP_CACHE_DIR;
}

void AddSamples(const SampleSet& set, size_t limit,
                google::protobuf::RepeatedPtrField<v1::Sample>* out) {
  for (size_t i = 0; i < set.samples.size() && i < limit; ++i) {
    v1::Sample* p = out->Add();
    for (const auto& [name, t] : set.samples[i]) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
}

class MixedPrecisionRealModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string name = "ppocr_cls";
    auto bytes = ReadFileLimited(CacheDir() + "/models/" + name + ".onnx",
                                 int64_t{1} << 30);
    if (!bytes.ok()) return;
    auto model = ImportOnnx(*bytes);
    if (!model.ok()) return;
    std::vector<std::string> inputs;
    for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
    auto calib =
        ReadSampleSet(CacheDir() + "/samples/" + name + "/calib", inputs);
    auto held =
        ReadSampleSet(CacheDir() + "/samples/" + name + "/heldout", inputs);
    if (!calib.ok() || !held.ok()) return;
    request_ = new v1::QuantizeRequest();
    request_->set_onnx_model(*std::move(bytes));
    // 16 calibration images (also the sensitivity images) keep the test
    // within its time budget; 32 held-out images for the SQNR (4 and 8
    // under sanitizers, e2e_scale.h).
    AddSamples(*calib, e2e::Scaled(16, 4),
               request_->mutable_calibration_samples());
    AddSamples(*held, e2e::Scaled(32, 8),
               request_->mutable_evaluation_samples());
    request_->mutable_tpc()->set_name("imx500@4.1");
  }
  static void TearDownTestSuite() {
    delete request_;
    request_ = nullptr;
  }
  void SetUp() override {
    if (request_ == nullptr) {
      GTEST_SKIP() << "ppocr_cls or its samples are missing under "
                   << CacheDir() << " (scripts/fetch_models.sh)";
    }
    ASSERT_TRUE(registry_.AddBuiltins().ok());
  }
  absl::StatusOr<v1::QuantizeResult> Run(const v1::QuantizeRequest& r) {
    JobContext ctx;
    ctx.registry = &registry_;
    ctx.pool = &pool_;
    return RunQuantizeJob(r, ctx);
  }

  static v1::QuantizeRequest* request_;
  tpc::TpcRegistry registry_;
  ThreadPool pool_{2};
};

v1::QuantizeRequest* MixedPrecisionRealModelTest::request_ = nullptr;

std::map<int, int> KernelBitsHistogram(const v1::QuantizeResult& r) {
  std::map<int, int> h;
  for (const auto& n : r.quantized_graph().nodes()) {
    for (const auto& w : n.weights()) {
      if (w.attr() == "kernel_attr") ++h[w.n_bits()];
    }
  }
  return h;
}

TEST_F(MixedPrecisionRealModelTest, BudgetsMetAndBetterThanUniformFourBit) {
  v1::QuantizeRequest uniform = *request_;
  uniform.mutable_mixed_precision()->set_kernel_weights_bits(4);
  auto u4 = Run(uniform);
  ASSERT_TRUE(u4.ok()) << u4.status();
  const double base = u4->baseline_8bit().weights_memory_bytes();
  std::printf(
      "ppocr_cls uniform 4-bit kernels: weights %.0f B (%.1f%% of "
      "8-bit %.0f B), held-out output SQNR %.2f dB\n",
      u4->resource_utilization().weights_memory_bytes(),
      100 * u4->resource_utilization().weights_memory_bytes() / base, base,
      u4->output_sqnr_db());
  for (double fraction : {0.75, 0.5}) {
    v1::QuantizeRequest r = *request_;
    r.mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_weights_memory_bytes(fraction);
    r.mutable_mixed_precision()->set_num_of_images(16);
    auto mp = Run(r);
    ASSERT_TRUE(mp.ok()) << mp.status();
    const double achieved = mp->resource_utilization().weights_memory_bytes();
    const auto hist = KernelBitsHistogram(*mp);
    std::string bits;
    for (const auto& [b, n] : hist) {
      bits += std::to_string(n) + "x" + std::to_string(b) + "b ";
    }
    std::printf(
        "ppocr_cls MP at %.0f%%: weights %.0f B (%.1f%%), kernels %s"
        "held-out output SQNR %.2f dB (uniform 4-bit %.2f dB)\n",
        100 * fraction, achieved, 100 * achieved / base, bits.c_str(),
        mp->output_sqnr_db(), u4->output_sqnr_db());
    EXPECT_DOUBLE_EQ(mp->targets().weights_memory_bytes(), fraction * base);
    EXPECT_LE(achieved, fraction * base);
    EXPECT_GT(mp->output_sqnr_db(), u4->output_sqnr_db()) << fraction;
    // The export: mixed kernel bits need int4 weights, i.e. opset 21.
    EXPECT_GT(hist.size(), 1u);
    auto qdq = ImportOnnx(mp->qdq_onnx());
    ASSERT_TRUE(qdq.ok()) << qdq.status();
    if (hist.count(4) || hist.count(2)) EXPECT_GE(qdq->DefaultOpset(), 21);
  }
}

// imx500@4.1 with every 8-bit output config given 4- and 2-bit twins
// (`twins`), or turned into 4 bits (`!twins`: the uniform 4-bit baseline),
// and every config accepting 2..16-bit inputs.
v1::TargetPlatformCapabilities ActivationBitsTpc(bool twins) {
  tpc::TpcRegistry registry;
  EXPECT_TRUE(registry.AddBuiltins().ok());
  auto base = registry.Resolve("imx500@4.1");
  EXPECT_TRUE(base.ok()) << base.status();
  v1::TargetPlatformCapabilities t = **base;
  t.set_name(twins ? "imx500_activation_mp" : "imx500_activation_4bit");
  auto edit = [&](v1::QuantizationConfigOptions* qco, bool add) {
    std::vector<v1::OpQuantizationConfig> extra;
    auto inputs = [](v1::OpQuantizationConfig* c) {
      c->clear_supported_input_activation_n_bits();
      for (int b : {2, 4, 8, 16}) c->add_supported_input_activation_n_bits(b);
    };
    for (auto& c : *qco->mutable_quantization_configurations()) {
      inputs(&c);
      if (!c.enable_activation_quantization() || c.activation_n_bits() != 8) {
        continue;
      }
      if (!add) {
        c.set_activation_n_bits(4);
        continue;
      }
      for (int b : {4, 2}) {
        extra.push_back(c);
        extra.back().set_activation_n_bits(b);
      }
    }
    for (auto& c : extra) *qco->add_quantization_configurations() = c;
    inputs(qco->mutable_base_config());
    if (!add && qco->base_config().enable_activation_quantization() &&
        qco->base_config().activation_n_bits() == 8) {
      qco->mutable_base_config()->set_activation_n_bits(4);
    }
  };
  edit(t.mutable_default_qco(), false);  // a single configuration
  if (twins) {
    // The default options stay 8-bit in the searched TPC.
    auto* d = t.mutable_default_qco();
    for (auto& c : *d->mutable_quantization_configurations()) {
      if (c.enable_activation_quantization() && c.activation_n_bits() == 4) {
        c.set_activation_n_bits(8);
      }
    }
    if (d->base_config().enable_activation_quantization() &&
        d->base_config().activation_n_bits() == 4) {
      d->mutable_base_config()->set_activation_n_bits(8);
    }
  }
  for (auto& s : *t.mutable_operator_set()) {
    if (s.has_qc_options()) edit(s.mutable_qc_options(), twins);
  }
  return t;
}

std::map<int, int> ActivationBitsHistogram(const v1::QuantizeResult& r) {
  std::map<int, int> h;
  for (const auto& n : r.quantized_graph().nodes()) {
    if (n.activation_bits() > 0 && !n.activations().empty()) {
      ++h[n.activation_bits()];
    }
  }
  return h;
}

// Shift-negative correction runs before the search (MCT 2.3's order): its
// Add outputs are searched and priced, so the final figure meets the target
// and the report has no overrun warning. It pins the corrected HardSwish
// outputs at 16 bits: no allocation goes below 87936 B (105.8% of the 8-bit
// figure), so 75% is out of reach (FAILED_PRECONDITION naming that figure)
// and the target here is 110%.
TEST_F(MixedPrecisionRealModelTest, ShiftNegativeTensorsAreWithinTheBudget) {
  v1::QuantizeRequest r = *request_;
  *r.mutable_tpc()->mutable_inline_tpc() = ActivationBitsTpc(true);
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_activation_memory_bytes(1.1);
  r.mutable_mixed_precision()->set_num_of_images(16);
  auto mp = Run(r);
  ASSERT_TRUE(mp.ok()) << mp.status();
  std::printf(
      "ppocr_cls activation MP at 110%% with shift-negative correction: "
      "activation %.0f B (target %.0f B), held-out output SQNR %.2f dB\n",
      mp->resource_utilization().activation_memory_bytes(),
      mp->targets().activation_memory_bytes(), mp->output_sqnr_db());
  EXPECT_NE(mp->report_json().find("shift-negative correction, shift"),
            std::string::npos);
  EXPECT_LE(mp->resource_utilization().activation_memory_bytes(),
            mp->targets().activation_memory_bytes());
  EXPECT_EQ(mp->report_json().find("exceeds the target"), std::string::npos);
}

// Activation mixed precision (MCT's activation target) on the widened TPC:
// the activation memory budget (max cut) is met and the held-out SQNR beats
// every output at 4 bits (50% of the 8-bit figure).
TEST_F(MixedPrecisionRealModelTest, ActivationBudgetMetAndBetterThanUniform4) {
  v1::QuantizeRequest uniform = *request_;
  *uniform.mutable_tpc()->mutable_inline_tpc() = ActivationBitsTpc(false);
  auto u4 = Run(uniform);
  ASSERT_TRUE(u4.ok()) << u4.status();
  v1::QuantizeRequest eight = *request_;
  *eight.mutable_tpc()->mutable_inline_tpc() = ActivationBitsTpc(true);
  auto a8 = Run(eight);
  ASSERT_TRUE(a8.ok()) << a8.status();
  const double base = a8->resource_utilization().activation_memory_bytes();
  std::printf(
      "ppocr_cls activations all 8-bit: %.0f B, SQNR %.2f dB; all 4-bit: "
      "%.0f B (%.1f%%), SQNR %.2f dB\n",
      base, a8->output_sqnr_db(),
      u4->resource_utilization().activation_memory_bytes(),
      100 * u4->resource_utilization().activation_memory_bytes() / base,
      u4->output_sqnr_db());
  for (double fraction : {0.75, 0.5}) {
    v1::QuantizeRequest r = eight;
    r.mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_activation_memory_bytes(fraction);
    r.mutable_mixed_precision()->set_num_of_images(16);
    // Shift-negative correction pins the corrected HardSwish outputs at 16
    // bits, out of reach of 75%: off here, see
    // ShiftNegativeTensorsAreWithinTheBudget.
    r.mutable_quantization()->set_shift_negative_activation_correction(false);
    auto mp = Run(r);
    ASSERT_TRUE(mp.ok()) << mp.status();
    const double achieved =
        mp->resource_utilization().activation_memory_bytes();
    std::string bits;
    for (const auto& [b, n] : ActivationBitsHistogram(*mp)) {
      bits += std::to_string(n) + "x" + std::to_string(b) + "b ";
    }
    std::printf(
        "ppocr_cls activation MP at %.0f%%: activation %.0f B (%.1f%%), "
        "outputs %sheld-out output SQNR %.2f dB\n",
        100 * fraction, achieved,
        100 * achieved / mp->baseline_8bit().activation_memory_bytes(),
        bits.c_str(), mp->output_sqnr_db());
    // The target is a fraction of the 8-bit figure (the shift-negative Adds
    // included, HardSwish outputs at 8 bits); `base` has them at 16.
    EXPECT_DOUBLE_EQ(mp->targets().activation_memory_bytes(),
                     fraction * mp->baseline_8bit().activation_memory_bytes());
    EXPECT_LE(achieved, mp->targets().activation_memory_bytes());
    EXPECT_GE(mp->output_sqnr_db(), u4->output_sqnr_db()) << fraction;
    auto qdq = ImportOnnx(mp->qdq_onnx());
    ASSERT_TRUE(qdq.ok()) << qdq.status();
  }
}

}  // namespace
}  // namespace quantd
