// The distances of the mixed-precision sensitivity, sum (f-q)^2 of four
// samples: NormalizedMse on each sample alone (the baseline) against
// DistancesOverSamples' four lanes, in cache (614,400 elements a sample:
// ppocr_det's neck at 1/4 resolution, 20 MB of f and q) and out of it (10M
// elements, 320 MB), as the MP job's cones meet them. Prints the best of
// `--runs` in ns per sample-element and the lanes' speed-up; aborts if a
// lane differs from the baseline in any bit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "bench/bench_util.h"
#include "core/mixed_precision/distance_lanes.h"
#include "core/mixed_precision/sensitivity_metric.h"

namespace quantd::mixed_precision {
namespace {

constexpr int kSamples = 4;

double BestSeconds(int runs, const std::function<void()>& body) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

void Measure(int64_t n, int runs) {
  uint64_t state = 1;
  std::vector<std::vector<float>> f(kSamples, std::vector<float>(n));
  std::vector<std::vector<float>> q = f;
  for (int s = 0; s < kSamples; ++s) {
    bench::FillUniform(absl::MakeSpan(f[s]), &state);
    bench::FillUniform(absl::MakeSpan(q[s]), &state);  // the noise
    for (int64_t i = 0; i < n; ++i) q[s][i] = f[s][i] + 0.01f * q[s][i];
  }
  std::vector<absl::Span<const float>> fs, qs;
  std::vector<FloatSideSums> side;
  for (int s = 0; s < kSamples; ++s) {
    fs.emplace_back(f[s]);
    qs.emplace_back(q[s]);
    side.push_back(SumFloatSide(f[s]));
  }
  double one[kSamples], lanes[kSamples];
  const double t_one = BestSeconds(runs, [&] {
    for (int s = 0; s < kSamples; ++s) one[s] = *NormalizedMse(fs[s], qs[s]);
  });
  const double t_lanes = BestSeconds(runs, [&] {
    if (!DistancesOverSamples(LaneDistance::kNormalizedMse, fs, qs, side,
                              absl::MakeSpan(lanes))
             .ok()) {
      std::abort();
    }
  });
  if (std::memcmp(one, lanes, sizeof(one)) != 0) {
    std::fprintf(stderr, "lanes differ from the one-sample distances\n");
    std::abort();
  }
  const double elements = static_cast<double>(n) * kSamples;
  std::printf("%10lld | %8.3f %8.3f | %5.2fx\n", static_cast<long long>(n),
              t_one * 1e9 / elements, t_lanes * 1e9 / elements,
              t_one / t_lanes);
}

}  // namespace
}  // namespace quantd::mixed_precision

int main(int argc, char** argv) {
  const int runs = quantd::bench::IntFlag(argc, argv, "runs", 20);
  std::printf(
      "  elements | one-sample  lanes (ns per sample-element) | "
      "speed-up\n");
  for (int64_t n : {int64_t{614400}, int64_t{10000000}}) {
    quantd::mixed_precision::Measure(n, std::max(1, runs));
  }
  return 0;
}
