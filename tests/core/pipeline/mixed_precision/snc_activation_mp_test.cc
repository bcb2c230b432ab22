// Shift-negative correction before activation mixed precision (MCT 2.3's
// order) on a ppocr_cls-like chain with imx500@4.0 widened to 8/4/2-bit
// outputs (activation_mp_tpc.h):
//   x 1x3x8x8 -> Conv "conv1" 1x1 + HardSwish "hs" (fused) -> Conv "conv2"
//   3x3, pads 1 -> y 1x4x8x8.
// The HardSwish output spans [-3/8, 8]: T = 8 and |min| / T = 0.047 <= 0.05,
// so the correction inserts an Add after hs (and moves conv2's padding into
// a Pad); hs becomes 16-bit. The search sees those tensors: the target holds
// on the final model and the Add's bits are the search's choice.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/mixed_precision/activation_mp_tpc.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace sncmp_test {
namespace {

std::string HardSwishChain() {
  OnnxModelBuilder b(14);
  b.Input("x", DType::kFloat, {1, 3, 8, 8});
  // conv1: every output channel is x's channel 0 (+ 0.1 * channel 1).
  std::vector<float> w1(4 * 3, 0.0f);
  for (int k = 0; k < 4; ++k) {
    w1[k * 3] = 1.0f;
    w1[k * 3 + 1] = 0.1f * static_cast<float>(k);
  }
  b.FloatInitializer("w1", w1, {4, 3, 1, 1});
  b.FloatInitializer("b1", std::vector<float>(4, 0.0f), {4});
  std::vector<float> w2(4 * 4 * 9);
  for (size_t i = 0; i < w2.size(); ++i) {
    w2[i] = static_cast<float>(static_cast<int>((i * 7) % 11) - 5) / 20.0f;
  }
  b.FloatInitializer("w2", w2, {4, 4, 3, 3});
  b.FloatInitializer("b2", std::vector<float>(4, 0.1f), {4});
  b.AddNode("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  b.AddNode("HardSwish", {"c1"}, {"h"}, "hs");
  b.AddNode("Conv", {"h", "w2", "b2"}, {"y"}, "conv2")
      .Ints("pads", {1, 1, 1, 1});
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

// Channel 0 covers [-2, 8) (the HardSwish output then [-3/8, 8]), the others
// [-1, 1); a fixed low-discrepancy sequence.
v1::QuantizeRequest Request(double activation_fraction) {
  v1::QuantizeRequest r;
  r.set_onnx_model(HardSwishChain());
  for (int s = 0; s < 8; ++s) {
    Tensor x(DType::kFloat, {1, 3, 8, 8});
    float* v = x.mutable_data<float>();
    for (int i = 0; i < 192; ++i) {
      const double u = std::fmod((s * 192 + i) * 0.6180339887, 1.0);
      v[i] = static_cast<float>(i < 64 ? -2 + 10 * u : 2 * u - 1);
    }
    *r.add_calibration_samples()->add_inputs() = TensorToSampleProto(x, "x");
  }
  *r.mutable_tpc()->mutable_inline_tpc() = ActivationMpTpc();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_activation_memory_bytes(activation_fraction);
  return r;
}

// The activation memory by hand. Sizes: x 192, hs 256, Add 256, y 256
// elements; conv1's output is fused-inner and the Pad's is not counted (MCT
// leaves it unquantized), the input stays 8-bit, hs is 16-bit. Cuts along
// the node order (tensors alive from producer to last consumer):
//   conv1: x           192 * 8
//   hs:    hs          256 * 16
//   Add:   hs + Add    256 * 16 + 256 * b
//   Pad:   Add         256 * b      (inside the Add cut)
//   conv2: y           256 * c
// All at 8 bits (hs too, the 8-bit figure): max(192, 256, 512, 256, 256)
// = 512 B. With hs at 16 bits and b = 8 the Add cut alone is 768 B.
double HandActivationBytes(int b, int c) {
  const double cuts[] = {192 * 8.0, 256 * 16.0, 256 * 16.0 + 256.0 * b,
                         256.0 * b, 256.0 * c};
  return *std::max_element(std::begin(cuts), std::end(cuts)) / 8;
}

const v1::QuantizedNode* FindNode(const v1::QuantizeResult& r,
                                  const std::string& name) {
  for (const auto& n : r.quantized_graph().nodes()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

class ShiftNegativeActivationMpTest : public testing::BuiltinTpcJobTest {};

// activation=1.25: 640 B, which hs at 16 bits with an 8-bit Add breaks
// (768 B): the search must take the Add below 8 bits (4 bits: 640 B).
TEST_F(ShiftNegativeActivationMpTest, InsertedTensorsAreSearchedWithinTarget) {
  auto r = Run(Request(1.25));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->baseline_8bit().activation_memory_bytes(), 512);
  EXPECT_DOUBLE_EQ(r->targets().activation_memory_bytes(), 640);
  const v1::QuantizedNode* hs = FindNode(*r, "hs");
  const v1::QuantizedNode* add = FindNode(*r, "hs_snc_add");
  const v1::QuantizedNode* conv2 = FindNode(*r, "conv2");
  ASSERT_NE(hs, nullptr);
  ASSERT_NE(add, nullptr) << "no shift-negative Add";
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(hs->activation_bits(), 16);
  // The Add is a candidate of the search (sensitivities per candidate) and
  // the search took it below 8 bits.
  EXPECT_GT(add->candidate_sensitivity_size(), 0);
  EXPECT_LT(add->activation_bits(), 8);
  const double hand =
      HandActivationBytes(add->activation_bits(), conv2->activation_bits());
  EXPECT_DOUBLE_EQ(r->resource_utilization().activation_memory_bytes(), hand);
  EXPECT_LE(hand, 640);
  EXPECT_EQ(r->report_json().find("exceeds the target"), std::string::npos);
  EXPECT_NE(r->report_json().find("shift-negative correction, shift 0.375"),
            std::string::npos);
}

// An activation override of the corrected HardSwish (no target: overrides
// only) selects its Add, which carries the grid hs had; hs stays 16-bit.
// Add at 2 bits: max(192, 512, 512 + 64, 64, 256) = 576 B.
TEST_F(ShiftNegativeActivationMpTest,
       ActivationOverrideOfTheActivationSetsItsAdd) {
  v1::QuantizeRequest request = Request(1.0);
  request.mutable_mixed_precision()->clear_target_fraction();
  v1::BitWidthOverride* o =
      request.mutable_mixed_precision()->add_bit_width_overrides();
  o->mutable_filter()->set_node_type("HardSwish");
  o->set_target(v1::BitWidthOverride::TARGET_ACTIVATION);
  o->set_bits(2);
  auto r = Run(request);
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::QuantizedNode* hs = FindNode(*r, "hs");
  const v1::QuantizedNode* add = FindNode(*r, "hs_snc_add");
  const v1::QuantizedNode* conv2 = FindNode(*r, "conv2");
  ASSERT_NE(hs, nullptr);
  ASSERT_NE(add, nullptr);
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(hs->activation_bits(), 16);
  EXPECT_EQ(add->activation_bits(), 2);
  EXPECT_EQ(conv2->activation_bits(), 8);
  EXPECT_DOUBLE_EQ(r->resource_utilization().activation_memory_bytes(), 576);
  EXPECT_EQ(r->report_json().find("matches no quantized node"),
            std::string::npos);
}

}  // namespace
}  // namespace sncmp_test
}  // namespace quantd
