// Statistics collectors against hand-derived NumPy/MCT semantics.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/graph/tensor.h"
#include "core/quantizers/internal/numpy_compat.h"
#include "core/stats/batch_histogram.h"
#include "core/stats/channel_collectors.h"
#include "core/stats/histogram_collector.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace quantd::stats {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HistogramCollectorTest, BatchHistogramClosesLastBin) {
  // np.histogram([0,1,2,3], bins=4): edges {0, .75, 1.5, 2.25, 3}; 3 falls
  // in the last (closed) bin.
  HistogramCollector hc(4);
  ASSERT_TRUE(hc.Update(std::vector<float>{0, 1, 2, 3}, "x").ok());
  EXPECT_THAT(hc.batch(0).edges, ElementsAre(0, 0.75, 1.5, 2.25, 3));
  EXPECT_THAT(hc.batch(0).counts, ElementsAre(1, 1, 1, 1));
}

TEST(HistogramCollectorTest, MergingIdenticalBatchesDoublesCounts) {
  // Both batches span [0, 3]: grid arange(0, 3.75, 0.75) = the batch edges,
  // so interpolation returns the batch counts and they add up.
  HistogramCollector hc(4);
  ASSERT_TRUE(hc.Update(std::vector<float>{0, 1, 2, 3}, "x").ok());
  ASSERT_TRUE(hc.Update(std::vector<float>{0, 1, 2, 3}, "x").ok());
  auto h = hc.GetHistogram();
  ASSERT_TRUE(h.ok());
  EXPECT_THAT(h->edges, ElementsAre(0, 0.75, 1.5, 2.25, 3));
  EXPECT_THAT(h->counts, ElementsAre(2, 2, 2, 2));
}

TEST(HistogramCollectorTest, MergeInterpolatesShiftedBatch) {
  // Batch 1 {0,1} bins 2: edges {0,.5,1}, counts {1,1}. Batch 2 {1,2}:
  // edges {1,1.5,2}. Grid: w = 1, arange(0, 3, 1) = {0,1,2}. Batch 1 cumsum
  // at {0,1,2} -> {0,2,2} -> {2,0}; batch 2 -> {0,0,2} -> {0,2}.
  HistogramCollector hc(2);
  ASSERT_TRUE(hc.Update(std::vector<float>{0, 1}, "x").ok());
  ASSERT_TRUE(hc.Update(std::vector<float>{1, 2}, "x").ok());
  auto h = hc.GetHistogram();
  ASSERT_TRUE(h.ok());
  EXPECT_THAT(h->edges, ElementsAre(0, 1, 2));
  EXPECT_THAT(h->counts, ElementsAre(2, 2));
}

// The fixture's hash of a float64 array: sum of mix(bits[i]) * P^(i+1)
// mod 2^64, mix = splitmix64's finalizer.
std::string BitsHash(const std::vector<double>& values) {
  uint64_t hash = 0, power = 1;
  for (double v : values) {
    uint64_t z = std::bit_cast<uint64_t>(v);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    power *= 0x100000001B3ull;
    hash += z * power;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(hash));
  return text;
}

nlohmann::json LoadMergeCases() {
  std::ifstream file(std::string(QUANTD_STATS_TESTDATA) + "/merge_grid.json");
  return file.good() ? nlohmann::json::parse(file) : nlohmann::json();
}

// Length, every edge and every count bit-exact against MCT's own code.
void ExpectEqualsMct(const quantizers::Histogram& merged,
                     const nlohmann::json& c, const std::string& what) {
  ASSERT_EQ(merged.edges.size(), c["length"].get<size_t>()) << what;
  for (const auto& [index, edge] : c["edges_at"].items()) {
    EXPECT_EQ(merged.edges[std::stoul(index)], edge.get<double>())
        << "edge " << index << " of " << what;
  }
  for (const auto& [index, count] : c["counts_at"].items()) {
    EXPECT_EQ(merged.counts[std::stoul(index)], count.get<double>())
        << "count " << index << " of " << what;
  }
  EXPECT_EQ(BitsHash(merged.edges), c["edges_hash"].get<std::string>()) << what;
  EXPECT_EQ(BitsHash(merged.counts), c["counts_hash"].get<std::string>())
      << what;
}

// MCT 2.3.0's merge grid (testdata/make_merge_grid.py runs MCT's code) on
// random, exact-multiple, shifted, straddling, tiny and huge ranges.
TEST(HistogramCollectorTest, MergeGridEqualsMctOnEveryRange) {
  const nlohmann::json data = LoadMergeCases();
  ASSERT_FALSE(data.is_null());
  const int n_bins = data["n_bins"].get<int>();
  int cases = 0, with_2050 = 0;
  for (const auto& c : data["grid_cases"]) {
    if (c.contains("error")) continue;
    quantizers::Histogram batch;
    batch.float32_edges = true;
    batch.edges = {c["min"].get<double>(), c["max"].get<double>()};
    batch.counts = {1};
    auto merged = MergeHistograms({batch}, n_bins);
    ASSERT_TRUE(merged.ok()) << merged.status();
    ExpectEqualsMct(*merged, c,
                    c["kind"].get<std::string>() + " range [" +
                        c["min"].dump() + ", " + c["max"].dump() + "]");
    ++cases;
    with_2050 += c["length"].get<int>() == 2050;
  }
  EXPECT_EQ(cases, 1900);
  EXPECT_GT(with_2050, 0);  // the cases that once came out as 2049
}

// Where MCT's np.arange cannot compute a length (max - min overflows float32)
// the merge is an error, not a crash.
TEST(HistogramCollectorTest, MergeOfRangeWiderThanFloat32IsAnError) {
  const nlohmann::json data = LoadMergeCases();
  ASSERT_FALSE(data.is_null());
  int cases = 0;
  for (const auto& c : data["grid_cases"]) {
    if (!c.contains("error")) continue;
    quantizers::Histogram batch;
    batch.float32_edges = true;
    batch.edges = {c["min"].get<double>(), c["max"].get<double>()};
    batch.counts = {1};
    auto merged = MergeHistograms({batch}, data["n_bins"].get<int>());
    EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(merged.status().message(), HasSubstr("wider than float32"));
    ++cases;
  }
  EXPECT_EQ(cases, 2);
}

// Shifted float32 batches through np.histogram and MCT's merge.
TEST(HistogramCollectorTest, MergedBatchesEqualMct) {
  const nlohmann::json data = LoadMergeCases();
  ASSERT_FALSE(data.is_null());
  int cases = 0;
  for (const auto& c : data["batch_cases"]) {
    HistogramCollector hc(data["n_bins"].get<int>());
    for (const auto& batch : c["batches"]) {
      std::vector<float> x;
      for (const auto& v : batch)
        x.push_back(static_cast<float>(v.get<double>()));
      ASSERT_TRUE(hc.Update(x, "x").ok());
    }
    auto merged = hc.GetHistogram();
    ASSERT_TRUE(merged.ok()) << merged.status();
    ExpectEqualsMct(*merged, c, "batch case " + std::to_string(cases));
    // The calibration's path: compact batches, MergeBatches.
    std::vector<BatchHistogram> compact;
    for (const auto& batch : c["batches"]) {
      std::vector<float> x;
      for (const auto& v : batch) x.push_back(v.get<float>());
      auto b = HistogramOfBatch(x, data["n_bins"].get<int>(), "x");
      ASSERT_TRUE(b.ok()) << b.status();
      compact.push_back(*std::move(b));
    }
    auto merged_compact = MergeBatches(compact, data["n_bins"].get<int>());
    ASSERT_TRUE(merged_compact.ok()) << merged_compact.status();
    ExpectEqualsMct(*merged_compact, c,
                    "compact batch case " + std::to_string(cases));
    ++cases;
  }
  EXPECT_EQ(cases, 400);
}

TEST(HistogramCollectorTest, BatchWiderThanFloat32IsAnErrorNamingTheTensor) {
  // np.histogram itself fails here: (x - min) * norm is inf * 0.
  HistogramCollector hc;
  absl::Status st = hc.Update(std::vector<float>{-3e38f, 0, 3e38f}, "wide");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'wide'"));
}

// Bits of a float, so that -0 and +0 differ.
uint32_t Bits(float v) { return std::bit_cast<uint32_t>(v); }

// Batches for the fast path: lengths around the vector widths, ReLU-like
// zeros of both signs, all-non-positive, constant, few-ulp and clipped
// batches.
std::vector<std::vector<float>> RandomBatches() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> out;
  for (int k = 0; k < 400; ++k) {
    const int n = k < 100 ? k + 1 : static_cast<int>(rng() % 5000) + 1;
    std::vector<float> x(n);
    const float scale = std::pow(10.0f, static_cast<float>(rng() % 9) - 4);
    for (float& v : x) v = normal(rng) * scale;
    switch (k % 6) {
      case 1:  // ReLU, a few negative zeros
        for (float& v : x) v = v < 0 ? (rng() % 7 == 0 ? -0.0f : 0.0f) : v;
        break;
      case 2:  // max is a zero of either sign
        for (float& v : x) v = v > 0 ? (rng() % 2 ? -0.0f : 0.0f) : v;
        break;
      case 3:  // constant
        for (float& v : x) v = x[0];
        break;
      case 4:  // a few ulps wide, down to denormals
        for (float& v : x) {
          v = std::ldexp(1.0f, -140 + static_cast<int>(k % 200));
          for (int u = static_cast<int>(rng() % 4); u > 0; --u)
            v = std::nextafter(v, 1.0f);
        }
        break;
      case 5:  // ReLU6-like: runs mixing the min and the max
        for (float& v : x) v = std::clamp(v, 0.0f, 0.1f * scale);
        break;
      default:
        break;
    }
    out.push_back(std::move(x));
  }
  return out;
}

// The observer's two-pass AVX2 histogram against the scalar reference
// (quantizers::internal::HistogramF32) and std::minmax_element, bit for bit.
TEST(HistogramOfBatchTest, EqualsReferenceBitForBit) {
  for (const std::vector<float>& x : RandomBatches()) {
    auto fast = HistogramOfBatch(x, quantizers::kHistogramBins, "x");
    ASSERT_TRUE(fast.ok()) << fast.status();
    std::vector<double> edges, counts;
    quantizers::internal::HistogramF32(x.data(), static_cast<int64_t>(x.size()),
                                       quantizers::kHistogramBins, &edges,
                                       &counts);
    const quantizers::Histogram h = fast->ToHistogram();
    ASSERT_EQ(BitsHash(h.edges), BitsHash(edges))
        << x.size() << " values from " << x[0];
    ASSERT_EQ(BitsHash(h.counts), BitsHash(counts))
        << x.size() << " values from " << x[0];
    auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    EXPECT_EQ(Bits(fast->min), Bits(*lo));
    EXPECT_EQ(Bits(fast->max), Bits(*hi));
  }
}

// The calibration's merge (MergeBatches: interpolation restricted to the
// grid points a batch covers, estimated edge indices, slopes divided up
// front) against the plain merge of the same histograms (MergeHistograms,
// InterpSorted), bit for bit: groups of 1 to 8 batches of one kind, and
// groups mixing scales 1e-4 to 1e4, where a narrow batch falls between two
// grid points, and single batches whose float32 edges repeat.
TEST(HistogramOfBatchTest, MergeBatchesEqualsThePlainMergeBitForBit) {
  std::vector<BatchHistogram> compact;
  for (const std::vector<float>& x : RandomBatches()) {
    auto b = HistogramOfBatch(x, quantizers::kHistogramBins, "x");
    ASSERT_TRUE(b.ok()) << b.status();
    compact.push_back(*std::move(b));
  }
  std::vector<std::vector<size_t>> groups;
  for (size_t k = 0, size = 1; k < compact.size();
       k += size, size = size % 8 + 1) {
    std::vector<size_t> g;
    for (size_t i = k; i < std::min(k + size, compact.size()); ++i)
      g.push_back(i);
    groups.push_back(g);
  }
  for (size_t k = 0; k < 60; ++k) {
    groups.push_back({k, k + 37, k + 101, k + 203, k + 311});
  }
  // Each batch alone, and two of a kind six apart (few-ulp batches with
  // their repeated edges among them).
  for (size_t k = 0; k < compact.size(); ++k) groups.push_back({k});
  for (size_t k = 0; k + 6 < compact.size(); ++k) groups.push_back({k, k + 6});
  int merged_groups = 0;
  for (const std::vector<size_t>& g : groups) {
    std::vector<BatchHistogram> batches;
    std::vector<quantizers::Histogram> plain;
    for (size_t i : g) {
      batches.push_back(compact[i]);
      plain.push_back(compact[i].ToHistogram());
    }
    auto fast = MergeBatches(batches, quantizers::kHistogramBins);
    auto reference = MergeHistograms(plain, quantizers::kHistogramBins);
    ASSERT_EQ(fast.ok(), reference.ok()) << "group from " << g[0];
    if (!fast.ok()) continue;
    // The grids' ends come from the batches' linspace ends here and from
    // their edges there, which differ only in the sign of a zero end (both
    // as MCT; the counts are interpolated at the same values).
    ASSERT_EQ(fast->edges, reference->edges) << "group from " << g[0];
    ASSERT_EQ(BitsHash(fast->counts), BitsHash(reference->counts))
        << "group from " << g[0];
    ++merged_groups;
  }
  EXPECT_GT(merged_groups, 900);
}

// Values on the float32 bin edges and 1 to 48 float32 steps either side,
// eight of a kind in a row (the vector loop's width): where the binning's
// index estimate can be off by one, and around the distance from an edge
// beyond which the observer skips the edge check. Ranges from the origin,
// offset far from it (a few steps per bin) and straddling zero.
TEST(HistogramOfBatchTest, ValuesNearTheEdgesCountAsTheReference) {
  const std::pair<float, float> ranges[] = {{0.0f, 6.0f},
                                            {-3.0f, 5.0f},
                                            {100.0f, 101.0f},
                                            {-1e-3f, 7e-4f},
                                            {-2.5f, -0.5f}};
  for (const auto& [lo, hi] : ranges) {
    const int n_bins = quantizers::kHistogramBins;
    const std::vector<double> grid =
        quantizers::internal::Linspace(lo, hi, n_bins + 1);
    std::vector<float> x = {lo, hi};
    for (int k = 0; k <= 48; k += (k < 8 ? 1 : 5)) {
      for (const float toward : {lo, hi}) {
        for (size_t i = 1; i + 1 < grid.size(); ++i) {
          float v = static_cast<float>(grid[i]);
          for (int u = 0; u < k; ++u) v = std::nextafter(v, toward);
          x.push_back(v);
        }
      }
    }
    auto fast = HistogramOfBatch(x, n_bins, "x");
    ASSERT_TRUE(fast.ok()) << fast.status();
    std::vector<double> edges, counts;
    quantizers::internal::HistogramF32(x.data(), static_cast<int64_t>(x.size()),
                                       n_bins, &edges, &counts);
    EXPECT_EQ(BitsHash(fast->ToHistogram().counts), BitsHash(counts))
        << "range [" << lo << ", " << hi << "]";
  }
}

TEST(HistogramOfBatchTest, InfIsAnErrorNamingTheElement) {
  std::vector<float> x(40, 1.0f);
  x[33] = -std::numeric_limits<float>::infinity();
  auto h = HistogramOfBatch(x, quantizers::kHistogramBins, "t");
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(h.status().message(), HasSubstr("Inf at element 33"));
}

TEST(HistogramCollectorTest, NaNIsAnErrorNamingTheTensor) {
  HistogramCollector hc;
  absl::Status s = hc.Update(std::vector<float>{1, NAN}, "conv_3_out");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("conv_3_out"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("NaN"));
}

TEST(HistogramCollectorTest, NoBatchIsAnError) {
  HistogramCollector hc;
  EXPECT_FALSE(hc.GetHistogram().ok());
}

TEST(MeanCollectorTest, MeanOfBatchMeansPerChannel) {
  // [2, 2] batches on axis 1: {{1,2},{3,4}} -> {2,3}; {{5,6},{7,8}} ->
  // {6,7}; mean of batch means {4,5}.
  MeanCollector mc(1);
  ASSERT_TRUE(
      mc.Update(Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}), "x").ok());
  ASSERT_TRUE(
      mc.Update(Tensor::FromVector<float>({5, 6, 7, 8}, {2, 2}), "x").ok());
  EXPECT_THAT(mc.mean(), ElementsAre(4, 5));
}

TEST(MeanCollectorTest, EveryChannelSumsInOrderInFloat64) {
  // [2, 29, 37] on axis 1: 29 channels (a block of 16, one of 8, then 5
  // alone). The reference: each channel's row summed sequentially in
  // float64, the collector's order before it interleaved channels.
  constexpr int kC = 29;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1e4f, 1e4f);
  std::vector<float> x(2 * kC * 37);
  for (float& v : x) v = u(rng);
  MeanCollector mc(1);
  ASSERT_TRUE(mc.Update(Tensor::FromVector<float>(x, {2, kC, 37}), "x").ok());
  std::vector<double> expected(kC, 0.0);
  for (int o = 0; o < 2; ++o) {
    for (int c = 0; c < kC; ++c) {
      double s = 0;
      for (int i = 0; i < 37; ++i) s += x[(o * kC + c) * 37 + i];
      expected[c] += s;
    }
  }
  for (double& e : expected) e /= 74.0;
  EXPECT_EQ(mc.mean(), expected);
}

TEST(MeanCollectorTest, NaNIsAnErrorNamingTheElement) {
  std::vector<float> x(2 * 9 * 5, 1.0f);
  x[52] = std::nanf("");
  MeanCollector mc(1);
  absl::Status st = mc.Update(Tensor::FromVector<float>(x, {2, 9, 5}), "m");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'m': NaN at element 52"));
}

TEST(MinMaxPerChannelCollectorTest, TracksEveryChannel) {
  // NCHW [1, 2, 1, 2] on axis 1: channel 0 {-1, 3}, channel 1 {2, 5}.
  MinMaxPerChannelCollector c(1);
  ASSERT_TRUE(
      c.Update(Tensor::FromVector<float>({-1, 3, 2, 5}, {1, 2, 1, 2}), "x")
          .ok());
  EXPECT_THAT(c.min_per_channel(), ElementsAre(-1, 2));
  EXPECT_THAT(c.max_per_channel(), ElementsAre(3, 5));
}

TEST(MinMaxCollectorTest, AcrossBatches) {
  MinMaxCollector c;
  ASSERT_TRUE(c.Update(Tensor::FromVector<float>({1, 2}, {2}), "x").ok());
  ASSERT_TRUE(c.Update(Tensor::FromVector<float>({-3, 0}, {2}), "x").ok());
  EXPECT_EQ(c.min(), -3);
  EXPECT_EQ(c.max(), 2);
}

TEST(MeanCollectorTest, BadAxisNamesTensor) {
  MeanCollector mc(5);
  absl::Status s = mc.Update(Tensor::FromVector<float>({1, 2}, {2}), "relu_1");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("relu_1"));
}

}  // namespace
}  // namespace quantd::stats
