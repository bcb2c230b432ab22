// HistogramOfBatch: np.histogram(x, bins=n_bins) of one float32 batch, the
// calibration observer's hot loop. Same bytes as the reference
// quantizers::internal::HistogramF32 (NumPy 1.24's _histogram fast path), in
// two passes over the caller's values and no copy: min/max with the
// finiteness check (AVX2 where the CPU has it), then the binning.
#ifndef QUANTD_CORE_STATS_BATCH_HISTOGRAM_H_
#define QUANTD_CORE_STATS_BATCH_HISTOGRAM_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/quantizers/types.h"

namespace quantd::stats {

// Stored compactly (calibration keeps one per tensor and sample until the
// merge): the float32 edges are float32(np.linspace(first, last, n_bins+1)),
// rebuilt by Edges().
struct BatchHistogram {
  double first = 0, last = 0;    // linspace ends (min/max, or -/+ 0.5)
  std::vector<uint32_t> counts;  // n_bins
  // The batch's min and max as std::minmax_element reports them (first
  // minimum, last maximum); they can differ from the end edges only in the
  // sign of a zero.
  float min = 0, max = 0;

  std::vector<double> Edges() const;
  quantizers::Histogram ToHistogram() const;  // float32 edges
};

// Errors name the tensor `name`: empty batch, NaN/Inf (the first bad
// element), or a range whose float32 width overflows (np.histogram fails).
absl::StatusOr<BatchHistogram> HistogramOfBatch(absl::Span<const float> values,
                                                int n_bins,
                                                absl::string_view name);

// MergeHistograms (histogram_collector.h) of compact batches, same bytes.
absl::StatusOr<quantizers::Histogram> MergeBatches(
    const std::vector<BatchHistogram>& batches, int n_bins);

}  // namespace quantd::stats

#endif  // QUANTD_CORE_STATS_BATCH_HISTOGRAM_H_
