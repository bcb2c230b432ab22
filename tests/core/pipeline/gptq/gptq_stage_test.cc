// GPTQ options and the block trainer on a synthetic layer.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/pipeline/gptq/gptq_block_trainer.h"
#include "core/pipeline/gptq/gptq_options.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/runtime/thread_pool.h"
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

// A linear layer fed correlated inputs (each row a random mix of normal
// values) with its float outputs as targets, and the 4-bit per-channel
// symmetric PTQ result of its weights.
struct LinearCase {
  Tensor w;
  GptqBlockData data;
  WeightParams ptq;
  GptqBlock block;
};

LinearCase MakeLinearCase(int64_t in, int64_t out, int64_t rows) {
  LinearCase c;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n01(0, 1);
  c.w = Tensor(DType::kFloat, {out, in});
  for (float& v : c.w.mutable_span<float>()) v = static_cast<float>(n01(rng));
  c.data.shape = {rows, out, in, 1};
  std::vector<double> mix(in * in);
  for (double& v : mix) v = n01(rng);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> z(in);
    for (double& v : z) v = n01(rng);
    for (int64_t j = 0; j < in; ++j) {
      double x = 0;
      for (int64_t k = 0; k < in; ++k) x += mix[j * in + k] * z[k];
      c.data.patches.push_back(static_cast<float>(x));  // float32, as a model's
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t m = 0; m < out; ++m) {
      double y = 0;
      for (int64_t j = 0; j < in; ++j) {
        y += c.w.data<float>()[m * in + j] * c.data.patches[r * in + j];
      }
      c.data.target.push_back(static_cast<float>(y));
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
  auto ptq = SelectWeightParams("w", c.w, slot, PtqOptions(), nullptr);
  EXPECT_TRUE(ptq.ok()) << ptq.status();
  if (ptq.ok()) c.ptq = *std::move(ptq);
  c.block.kernel_node = 0;
  c.block.out_features = out;
  c.block.in_features = in;
  return c;
}

// A 64 -> 8 linear layer: nearest rounding ignores the input statistics,
// learned rounding fits them, so the output SQNR must rise (AdaRound's
// premise).
TEST(GptqBlockTrainer, LearnedRoundingBeatsNearestOnALinearLayer) {
  const int64_t out = 8;
  LinearCase c = MakeLinearCase(64, out, 2048);
  GptqOptions options;
  options.n_epochs = 10;
  options.train_bias = false;
  auto r = TrainGptqBlock(c.block, c.data, c.w, c.ptq,
                          std::vector<double>(out, 0.0), options,
                          /*pool=*/nullptr, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("block SQNR: PTQ %.2f dB, GPTQ %.2f dB\n", r->sqnr_before_db,
              r->sqnr_after_db);
  EXPECT_GT(r->sqnr_after_db, r->sqnr_before_db + 0.5);
}

// Training on a pool splits each step's products (rows of the forward,
// outputs of the weight gradient: 160 outputs make three slices) and the
// per-weight updates; every trained integer, the bias and both figures are
// the same as on one thread, for two and three threads.
TEST(GptqBlockTrainer, PoolGivesTheSameResultAsOneThread) {
  const int64_t out = 160;
  LinearCase c = MakeLinearCase(24, out, 1024);
  GptqOptions options;
  options.n_epochs = 2;
  std::vector<double> bias(out);
  for (int64_t m = 0; m < out; ++m) bias[m] = 0.01 * static_cast<double>(m);
  auto one = TrainGptqBlock(c.block, c.data, c.w, c.ptq, bias, options,
                            /*pool=*/nullptr, nullptr, nullptr);
  ASSERT_TRUE(one.ok()) << one.status();
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto many = TrainGptqBlock(c.block, c.data, c.w, c.ptq, bias, options,
                               &pool, nullptr, nullptr);
    ASSERT_TRUE(many.ok()) << many.status();
    EXPECT_EQ(many->weights.ints, one->weights.ints) << threads;
    ASSERT_EQ(many->bias.size(), one->bias.size());
    EXPECT_EQ(0, std::memcmp(many->bias.data(), one->bias.data(),
                             one->bias.size() * sizeof(double)))
        << threads;
    EXPECT_EQ(many->sqnr_after_db, one->sqnr_after_db) << threads;
    EXPECT_EQ(many->sqnr_before_db, one->sqnr_before_db) << threads;
    EXPECT_EQ(many->steps, one->steps);
  }
}

}  // namespace

}  // namespace quantd
