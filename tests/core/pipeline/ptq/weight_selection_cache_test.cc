// SelectAllParams with a WeightSelectionCache: a re-selection whose options
// leave the weights' search as it was takes the cached weights (the same
// buffers), and they equal a search from scratch; other options, or a slot
// whose config changed, search again.
#include <cmath>
#include <vector>

#include "core/pipeline/ptq/param_selection.h"
#include "gtest/gtest.h"
#include "tests/core/pipeline/corrections/snc_test_state.h"

namespace quantd {
namespace {

// x -> LeakyRelu -> Conv, the kernel planned as 8-bit per-channel
// POWER_OF_TWO on axis 0.
JobState ConvState(int kernel_bits) {
  std::vector<float> w(18);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = std::sin(0.7f * static_cast<float>(i)) * (i < 9 ? 1.0f : 0.05f);
  }
  JobState s = LeakyReluConvSncState({{1, 1, 5, 5}, w, {2, 1, 3, 3}, {}, {}});
  WeightSlot kernel;
  kernel.attr = "kernel_attr";
  kernel.input_index = 1;
  kernel.channel_axis = 0;
  kernel.config.set_weights_n_bits(kernel_bits);
  kernel.config.set_weights_quantization_method(
      v1::QUANTIZATION_METHOD_POWER_OF_TWO);
  kernel.config.set_weights_per_channel_threshold(true);
  kernel.config.set_enable_weights_quantization(true);
  s.plans[1].weights = {kernel};
  return s;
}

const WeightParams& Kernel(const JobState& s) {
  return s.plans[1].weight_results.at(0);
}

void ExpectSameWeights(const WeightParams& a, const WeightParams& b) {
  EXPECT_EQ(a.thresholds, b.thresholds);
  EXPECT_EQ(a.n_bits, b.n_bits);
  ASSERT_EQ(a.int_values.num_elements(), b.int_values.num_elements());
  for (int64_t i = 0; i < a.int_values.num_elements(); ++i) {
    EXPECT_EQ(a.int_values.data<int32_t>()[i], b.int_values.data<int32_t>()[i]);
  }
}

TEST(WeightSelectionCacheTest, ActivationOptionsTakeTheCachedWeights) {
  WeightSelectionCache cache;
  JobState first = ConvState(8);
  ASSERT_TRUE(SelectAllParams(&first, nullptr, nullptr, nullptr, &cache).ok());
  ASSERT_TRUE(cache.options.has_value());
  ASSERT_EQ(cache.per_node.size(), 2u);
  ASSERT_EQ(cache.per_node[1].size(), 1u);

  JobState again = ConvState(8);
  again.options.z_threshold = 8;
  again.options.shift_negative_params_search = true;
  ASSERT_TRUE(SelectAllParams(&again, nullptr, nullptr, nullptr, &cache).ok());
  EXPECT_TRUE(Kernel(again).int_values.SharesBufferWith(
      cache.per_node[1][0].int_values));

  JobState fresh = ConvState(8);
  fresh.options = again.options;
  ASSERT_TRUE(SelectAllParams(&fresh, nullptr, nullptr, nullptr).ok());
  ExpectSameWeights(Kernel(again), Kernel(fresh));
  // The activations were selected again with the new options.
  EXPECT_EQ(again.plans[0].activation.threshold,
            fresh.plans[0].activation.threshold);
}

TEST(WeightSelectionCacheTest, WeightOptionsSearchAgain) {
  WeightSelectionCache cache;
  JobState first = ConvState(8);
  ASSERT_TRUE(SelectAllParams(&first, nullptr, nullptr, nullptr, &cache).ok());

  JobState other = ConvState(8);
  other.options.weights_error_method = quantizers::ErrorMethod::kNoClipping;
  ASSERT_TRUE(SelectAllParams(&other, nullptr, nullptr, nullptr, &cache).ok());
  EXPECT_FALSE(
      Kernel(other).int_values.SharesBufferWith(Kernel(first).int_values));
  JobState fresh = ConvState(8);
  fresh.options = other.options;
  ASSERT_TRUE(SelectAllParams(&fresh, nullptr, nullptr, nullptr).ok());
  ExpectSameWeights(Kernel(other), Kernel(fresh));
  // No clipping: the first channel's threshold covers its largest |w|
  // (sin(1.4) = 0.985 at i = 2 rounds up to the power of two 1).
  EXPECT_EQ(Kernel(other).thresholds.at(0), 1.0);
  // The cache now holds the new selection.
  ASSERT_TRUE(cache.options.has_value());
  EXPECT_EQ(cache.options->weights_error_method,
            quantizers::ErrorMethod::kNoClipping);
  EXPECT_TRUE(cache.per_node[1][0].int_values.SharesBufferWith(
      Kernel(other).int_values));
}

TEST(WeightSelectionCacheTest, ChangedSlotSearchesAgain) {
  WeightSelectionCache cache;
  JobState first = ConvState(8);
  ASSERT_TRUE(SelectAllParams(&first, nullptr, nullptr, nullptr, &cache).ok());

  JobState four = ConvState(4);
  ASSERT_TRUE(SelectAllParams(&four, nullptr, nullptr, nullptr, &cache).ok());
  EXPECT_EQ(Kernel(four).n_bits, 4);
  JobState fresh = ConvState(4);
  ASSERT_TRUE(SelectAllParams(&fresh, nullptr, nullptr, nullptr).ok());
  ExpectSameWeights(Kernel(four), Kernel(fresh));
  for (int64_t i = 0; i < Kernel(four).int_values.num_elements(); ++i) {
    const int32_t q = Kernel(four).int_values.data<int32_t>()[i];
    EXPECT_GE(q, -8);
    EXPECT_LE(q, 7);
  }
}

}  // namespace
}  // namespace quantd
