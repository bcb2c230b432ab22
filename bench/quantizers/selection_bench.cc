// Threshold-search benchmarks: per-channel symmetric MSE on a 256x256x3x3
// kernel (serial, and on a 2-thread pool as the peer it is compared with),
// and histogram power-of-two / symmetric / uniform MSE searches on a merged
// 2048-bin histogram.
#include <algorithm>
#include <random>
#include <vector>

#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "core/quantizers/selection.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"
#include "core/stats/batch_histogram.h"
#include "core/stats/histogram_collector.h"

namespace quantd::quantizers {
namespace {

std::vector<float> Kernel() {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 0.05f);
  std::vector<float> w(256 * 256 * 3 * 3);
  for (float& v : w) v = n(rng);
  return w;
}

Histogram MergedHistogram() {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.5f, 1.0f);
  stats::HistogramCollector hc;
  for (int b = 0; b < 4; ++b) {
    std::vector<float> x(8192);
    for (float& v : x) v = std::max(0.0f, n(rng));
    (void)hc.Update(x, "bench");
  }
  return *hc.GetHistogram();
}

void RunSymmetricPerChannel(benchmark::State& state, ThreadPool* pool) {
  const std::vector<float> w = Kernel();
  const TensorView t{w, {256, 256, 3, 3}};
  WeightsSearchOptions o;
  o.error_method = ErrorMethod::kMse;
  o.channel_axis = 0;
  o.n_bits = static_cast<int>(state.range(0));
  o.pool = pool;
  for (auto _ : state) {
    auto r = SymmetricSelectionTensor(t, o);
    benchmark::DoNotOptimize(r);
  }
}

void BM_SymmetricPerChannelMse(benchmark::State& state) {
  RunSymmetricPerChannel(state, nullptr);
}
BENCHMARK(BM_SymmetricPerChannelMse)
    ->Arg(8)
    ->Arg(4)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);

void BM_SymmetricPerChannelMsePool2(benchmark::State& state) {
  ThreadPool pool(2);
  RunSymmetricPerChannel(state, &pool);
}
BENCHMARK(BM_SymmetricPerChannelMsePool2)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond);

// The same search with a job's live token: what polling it costs (the peer
// is BM_SymmetricPerChannelMse, which has none).
void BM_SymmetricPerChannelMseLiveToken(benchmark::State& state) {
  const std::vector<float> w = Kernel();
  const TensorView t{w, {256, 256, 3, 3}};
  CancellationToken cancel(absl::Now() + absl::Hours(1));
  WeightsSearchOptions o;
  o.error_method = ErrorMethod::kMse;
  o.channel_axis = 0;
  o.cancel = &cancel;
  for (auto _ : state) {
    auto r = SymmetricSelectionTensor(t, o);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_SymmetricPerChannelMseLiveToken)->Unit(benchmark::kMillisecond);

// The same search once its job is cancelled: every error evaluation returns
// at once. A cancel that lands mid-search costs at most one row error plus
// this; compare with BM_SymmetricPerChannelMse (the bound: 100 ms).
void BM_SymmetricPerChannelMseCancelled(benchmark::State& state) {
  const std::vector<float> w = Kernel();
  const TensorView t{w, {256, 256, 3, 3}};
  CancellationToken cancel;
  cancel.Cancel();
  WeightsSearchOptions o;
  o.error_method = ErrorMethod::kMse;
  o.channel_axis = 0;
  o.cancel = &cancel;
  for (auto _ : state) {
    auto r = SymmetricSelectionTensor(t, o);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_SymmetricPerChannelMseCancelled)->Unit(benchmark::kMillisecond);

template <typename Fn>
void RunHistogram(benchmark::State& state, Fn fn) {
  const Histogram h = MergedHistogram();
  HistogramSearchOptions o;
  o.error_method = ErrorMethod::kMse;
  for (auto _ : state) {
    auto r = fn(h, o);
    benchmark::DoNotOptimize(r);
  }
}

void BM_HistogramPowerOfTwoMse(benchmark::State& state) {
  RunHistogram(state, PowerOfTwoSelectionHistogram);
}
BENCHMARK(BM_HistogramPowerOfTwoMse)->Unit(benchmark::kMillisecond);

void BM_HistogramSymmetricMse(benchmark::State& state) {
  RunHistogram(state, SymmetricSelectionHistogram);
}
BENCHMARK(BM_HistogramSymmetricMse)->Unit(benchmark::kMillisecond);

void BM_HistogramUniformMse(benchmark::State& state) {
  RunHistogram(state, UniformSelectionHistogram);
}
BENCHMARK(BM_HistogramUniformMse)->Unit(benchmark::kMillisecond);

// A ReLU6-like activation: 40% zeros, 2% sixes, the rest spread between.
std::vector<float> Relu6Values(int64_t n) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.5f, 2.0f);
  std::vector<float> x(n);
  for (float& v : x) v = std::clamp(d(rng), 0.0f, 6.0f);
  return x;
}

// The calibration observer's binning of one tensor (values per second).
void BM_HistogramOfBatch(benchmark::State& state) {
  const std::vector<float> x = Relu6Values(state.range(0));
  for (auto _ : state) {
    auto h = stats::HistogramOfBatch(x, kHistogramBins, "bench");
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_HistogramOfBatch)->Arg(150528)->Arg(1204224);

// One tensor's per-sample histograms as calibration keeps them: 32 samples
// of unclipped activations whose range moves from sample to sample.
std::vector<stats::BatchHistogram> SampleHistograms() {
  std::mt19937 rng(5);
  std::vector<stats::BatchHistogram> batches;
  for (int b = 0; b < 32; ++b) {
    std::normal_distribution<float> d(0.1f * (b % 5), 1.0f + 0.05f * b);
    std::vector<float> x(4096);
    for (float& v : x) v = d(rng);
    batches.push_back(*stats::HistogramOfBatch(x, kHistogramBins, "bench"));
  }
  return batches;
}

// The merge of those histograms at the end of calibration (MergeBatches),
// against the reference merge of the same histograms with explicit edges
// (MergeHistograms), which it must equal byte for byte.
void BM_MergeBatches(benchmark::State& state) {
  const std::vector<stats::BatchHistogram> batches = SampleHistograms();
  for (auto _ : state) {
    auto merged = stats::MergeBatches(batches, kHistogramBins);
    benchmark::DoNotOptimize(merged);
  }
  state.SetItemsProcessed(state.iterations() * batches.size());
}
BENCHMARK(BM_MergeBatches);

void BM_MergeHistogramsReference(benchmark::State& state) {
  std::vector<Histogram> batches;
  for (const auto& b : SampleHistograms()) batches.push_back(b.ToHistogram());
  for (auto _ : state) {
    auto merged = stats::MergeHistograms(batches, kHistogramBins);
    benchmark::DoNotOptimize(merged);
  }
  state.SetItemsProcessed(state.iterations() * batches.size());
}
BENCHMARK(BM_MergeHistogramsReference);

}  // namespace
}  // namespace quantd::quantizers
