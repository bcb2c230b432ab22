#include "core/quantizers/outlier_filter.h"

#include <cmath>
#include <vector>

#include "core/quantizers/internal/numpy_compat.h"
#include "core/quantizers/selection.h"
#include "core/util/status_macros.h"

namespace quantd::quantizers {

absl::StatusOr<Histogram> ZScoreFilter(double z_threshold,
                                       const Histogram& histogram) {
  RETURN_IF_ERROR(ValidateHistogram(histogram));
  Histogram out = histogram;
  if (std::isinf(z_threshold) && z_threshold > 0) return out;
  const int64_t n = static_cast<int64_t>(histogram.counts.size());
  const double* bins = histogram.edges.data();  // left edges
  const double* counts = histogram.counts.data();
  const double total = internal::PairwiseSum(counts, n);
  std::vector<double> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = bins[i] * counts[i];
  const double mu = internal::PairwiseSum(t.data(), n) / total;
  if (histogram.float32_edges) {
    // float32 edges minus a float64 scalar stay float32 in NumPy.
    const float mu32 = static_cast<float>(mu);
    for (int64_t i = 0; i < n; ++i) {
      const float d = static_cast<float>(bins[i]) - mu32;
      t[i] = static_cast<double>(d * d) * counts[i];
    }
    const double sigma = std::sqrt(internal::PairwiseSum(t.data(), n) / total);
    const float sigma32 = static_cast<float>(sigma);
    const float z32 = static_cast<float>(z_threshold);
    for (int64_t i = 0; i < n; ++i) {
      const float z = std::abs(static_cast<float>(bins[i]) - mu32) / sigma32;
      if (z > z32) out.counts[i] = 0;
    }
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double d = bins[i] - mu;
    t[i] = d * d * counts[i];
  }
  const double sigma = std::sqrt(internal::PairwiseSum(t.data(), n) / total);
  for (int64_t i = 0; i < n; ++i) {
    if (std::abs(bins[i] - mu) / sigma > z_threshold) out.counts[i] = 0;
  }
  return out;
}

}  // namespace quantd::quantizers
