// HistogramOfBatch: np.histogram(x, bins=n_bins) of one float32 batch, the
// calibration observer's hot loop. Same bytes as the reference
// quantizers::internal::HistogramF32 (NumPy 1.24's _histogram fast path), in
// two passes over the caller's values and no copy: min/max with the
// finiteness check, then the binning (AVX2 where the CPU has it; the scalar
// loop otherwise, with the same float32 arithmetic).
#ifndef QUANTD_CORE_STATS_BATCH_HISTOGRAM_H_
#define QUANTD_CORE_STATS_BATCH_HISTOGRAM_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/quantizers/types.h"

namespace quantd::stats {

struct BatchHistogram {
  quantizers::Histogram histogram;  // float32 edges, integer counts
  // The batch's min and max as std::minmax_element reports them (first
  // minimum, last maximum); they can differ from the end edges only in the
  // sign of a zero.
  float min = 0, max = 0;
};

// Errors name the tensor `name`: empty batch, NaN/Inf (the first bad
// element), or a range whose float32 width overflows (np.histogram fails).
absl::StatusOr<BatchHistogram> HistogramOfBatch(absl::Span<const float> values,
                                                int n_bins,
                                                absl::string_view name);

}  // namespace quantd::stats

#endif  // QUANTD_CORE_STATS_BATCH_HISTOGRAM_H_
