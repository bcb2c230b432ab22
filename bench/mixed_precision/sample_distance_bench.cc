// The mixed-precision sensitivity's distance, sum (f-q)^2 of one sample:
// one chain of additions in element order (the baseline: what a plain loop
// gives) against DistanceToFloat's sixteen partial sums
// (internal/distance_sums.h) on 614,400 elements (ppocr_det's neck at 1/4
// resolution, 2.5 MB each of f and q): in cache, and with q in cache and f
// out of it (each run another of 64 float sides, 157 MB in all, as the
// sensitivity meets the float side of the tensor a cone just made). Prints the
// best of `--runs` in ns per element and the speed-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench/bench_util.h"
#include "core/mixed_precision/sample_distance.h"

namespace quantd::mixed_precision {
namespace {

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

double OneChain(absl::Span<const float> f, absl::Span<const float> q,
                const FloatSideSums& side) {
  double sum = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const double d = static_cast<double>(f[i]) - q[i];
    sum += d * d;
  }
  const double n = static_cast<double>(f.size());
  return (sum / n) / (side.squared_norm / n + 1e-8);
}

// `copies` float sides of n elements each, one per run (so f is out of
// cache when copies * n is much larger than the cache), against one q.
void Measure(const char* label, int64_t n, int copies, int runs) {
  uint64_t state = 1;
  std::vector<std::vector<float>> f(copies, std::vector<float>(n));
  std::vector<float> q(n);
  for (auto& v : f) bench::FillUniform(absl::MakeSpan(v), &state);
  bench::FillUniform(absl::MakeSpan(q), &state);
  std::vector<FloatSideSums> side;
  for (const auto& v : f) side.push_back(SumFloatSide(v));
  int next = 0;
  double a = 0, b = 0;
  const double t_chain = BestSeconds(runs, [&] {
    const int c = next++ % copies;
    a = OneChain(f[c], q, side[c]);
  });
  next = 0;
  const double t_sums = BestSeconds(runs, [&] {
    const int c = next++ % copies;
    b = *DistanceToFloat(SampleDistance::kNormalizedMse, f[c], q, side[c]);
  });
  if (std::abs(a - b) > 1e-9 * std::abs(a)) {  // n ulps of the chain
    std::fprintf(stderr, "the two sums disagree: %.17g %.17g\n", a, b);
    std::abort();
  }
  std::printf("%-22s %10lld | %8.3f %8.3f | %5.2fx\n", label,
              static_cast<long long>(n), t_chain * 1e9 / n, t_sums * 1e9 / n,
              t_chain / t_sums);
}

}  // namespace
}  // namespace quantd::mixed_precision

int main(int argc, char** argv) {
  const int runs = std::max(1, quantd::bench::IntFlag(argc, argv, "runs", 20));
  std::printf(
      "case                     elements | one chain  partials (ns per "
      "element) | speed-up\n");
  quantd::mixed_precision::Measure("in cache", 614400, 1, runs);
  quantd::mixed_precision::Measure("f out of cache, q in", 614400, 64,
                                   std::max(runs, 64));
  return 0;
}
