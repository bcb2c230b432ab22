// GPTQ options and the block trainer on a synthetic layer.
#include <cmath>
#include <random>
#include <vector>

#include "core/pipeline/gptq/gptq_block_trainer.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/ptq/param_selection.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

TEST(GptqOptions, DefaultsAreMcts) {
  auto o = ResolveGptqOptions(v1::GptqConfig());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->n_epochs, 5);
  EXPECT_DOUBLE_EQ(o->lr_rounding, 3e-2);
  EXPECT_DOUBLE_EQ(o->lr_bias, 1e-4);
  EXPECT_TRUE(o->train_bias);
  EXPECT_DOUBLE_EQ(o->regularization_factor, 0.01);
  EXPECT_TRUE(o->gradual_activation_quantization);
  EXPECT_EQ(o->rounding, v1::TRAINING_METHOD_SOFT_ROUNDING);
}

TEST(GptqOptions, HessianWeightingIsUnimplemented) {
  v1::GptqConfig c;
  c.set_use_hessian_based_weights(true);
  EXPECT_EQ(ResolveGptqOptions(c).status().code(),
            absl::StatusCode::kUnimplemented);
  c.set_use_hessian_based_weights(false);
  EXPECT_TRUE(ResolveGptqOptions(c).ok());
}

TEST(GptqOptions, BadValuesNameTheField) {
  v1::GptqConfig c;
  c.set_learning_rate(-1);
  auto o = ResolveGptqOptions(c);
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("gptq.learning_rate"), std::string::npos);
}

// A 64 -> 8 linear layer with 4-bit per-channel symmetric weights, fed
// correlated inputs: nearest rounding ignores the input statistics, learned
// rounding fits them, so the output SQNR must rise (AdaRound's premise).
TEST(GptqBlockTrainer, LearnedRoundingBeatsNearestOnALinearLayer) {
  const int64_t in = 64, out = 8, rows = 2048;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n01(0, 1);
  Tensor w(DType::kFloat, {out, in});
  for (float& v : w.mutable_span<float>()) v = static_cast<float>(n01(rng));
  GptqBlockData data;
  data.shape = {rows, out, in, 1};
  std::vector<double> mix(in * in);
  for (double& v : mix) v = n01(rng);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> z(in);
    for (double& v : z) v = n01(rng);
    for (int64_t j = 0; j < in; ++j) {
      double x = 0;
      for (int64_t k = 0; k < in; ++k) x += mix[j * in + k] * z[k];
      data.patches.push_back(x);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t m = 0; m < out; ++m) {
      double y = 0;
      for (int64_t j = 0; j < in; ++j) {
        y += w.data<float>()[m * in + j] * data.patches[r * in + j];
      }
      data.target.push_back(y);
    }
  }
  WeightSlot slot;
  slot.attr = "kernel_attr";
  slot.input_index = 1;
  slot.channel_axis = 0;
  slot.config.set_weights_quantization_method(
      v1::QUANTIZATION_METHOD_SYMMETRIC);
  slot.config.set_weights_n_bits(4);
  slot.config.set_weights_per_channel_threshold(true);
  slot.config.set_enable_weights_quantization(true);
  auto ptq = SelectWeightParams("w", w, slot, PtqOptions(), nullptr);
  ASSERT_TRUE(ptq.ok()) << ptq.status();
  GptqBlock block;
  block.kernel_node = 0;
  block.out_features = out;
  block.in_features = in;
  GptqOptions options;
  options.n_epochs = 10;
  options.train_bias = false;
  auto r = TrainGptqBlock(block, data, w, *ptq, std::vector<double>(out, 0.0),
                          options, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("block SQNR: PTQ %.2f dB, GPTQ %.2f dB\n", r->sqnr_before_db,
              r->sqnr_after_db);
  EXPECT_GT(r->sqnr_after_db, r->sqnr_before_db + 0.5);
}

}  // namespace
}  // namespace quantd
