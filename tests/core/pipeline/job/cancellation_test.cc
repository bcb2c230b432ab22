// Cancellation inside a weight threshold search (param_selection.h): the
// status is the token's, and a cancelled search ends early. How early is a
// figure of bench/quantizers (BM_SymmetricPerChannelMseCancelled).
#include "core/runtime/cancellation.h"

#include <random>
#include <string>
#include <thread>

#include "core/pipeline/ptq/param_selection.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

Tensor RandomKernel(std::vector<int64_t> shape) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  Tensor t(DType::kFloat, std::move(shape));
  for (float& v : t.mutable_span<float>()) v = normal(rng);
  return t;
}

WeightSlot SymmetricPerChannelKernel() {
  WeightSlot slot;
  slot.attr = "kernel_attr";
  slot.input_index = 1;
  slot.channel_axis = 0;
  slot.config.set_enable_weights_quantization(true);
  slot.config.set_weights_n_bits(8);
  slot.config.set_weights_per_channel_threshold(true);
  slot.config.set_weights_quantization_method(
      v1::QUANTIZATION_METHOD_SYMMETRIC);
  return slot;
}

TEST(WeightSearchCancellation, ACancelledJobGetsTheTokensStatus) {
  CancellationToken cancel;
  cancel.Cancel(absl::CancelledError("client went away"));
  auto w = SelectWeightParams("w", RandomKernel({16, 8, 3, 3}),
                              SymmetricPerChannelKernel(), PtqOptions(),
                              nullptr, &cancel);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(w.status().message(), "client went away");
}

TEST(WeightSearchCancellation, APassedDeadlineEndsTheSearch) {
  CancellationToken cancel(absl::InfinitePast());
  auto w = SelectWeightParams("w", RandomKernel({16, 8, 3, 3}),
                              SymmetricPerChannelKernel(), PtqOptions(),
                              nullptr, &cancel);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kDeadlineExceeded);
}

// A cancel from another thread while the search runs: whichever point it
// lands at, the result is the token's status, never a half-searched
// threshold.
TEST(WeightSearchCancellation, CancelDuringTheSearchNeverYieldsAResult) {
  const Tensor kernel = RandomKernel({128, 64, 3, 3});
  for (int delay_us : {0, 200, 2000}) {
    CancellationToken cancel;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      cancel.Cancel();
    });
    auto w = SelectWeightParams("w", kernel, SymmetricPerChannelKernel(),
                                PtqOptions(), nullptr, &cancel);
    canceller.join();
    if (w.ok()) {
      // Finished before the cancel: the thresholds are a full search's.
      const CancellationToken never;
      auto full = SelectWeightParams("w", kernel, SymmetricPerChannelKernel(),
                                     PtqOptions(), nullptr, &never);
      ASSERT_TRUE(full.ok());
      EXPECT_EQ(w->thresholds, full->thresholds);
    } else {
      EXPECT_EQ(w.status().code(), absl::StatusCode::kCancelled);
    }
  }
}

}  // namespace
}  // namespace quantd
