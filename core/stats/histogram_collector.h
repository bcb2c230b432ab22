// HistogramCollector: MCT 2.3.0's per-tensor histogram statistics.
//
// Every Update() takes np.histogram(x, bins=2048) of one batch (float32 edges
// from the batch min/max, last bin closed). GetHistogram() merges the batches
// in arrival order exactly as MCT does: a grid np.arange(min, max + w, w)
// with w = (max - min) / n_bins from the float32 batch edges (max - min in
// float32; 2049 or 2050 edges), and per batch
// diff(interp(grid, batch_edges, [0, cumsum(counts)]))
// summed. The merged histogram has float64 edges and fractional counts.
#ifndef QUANTD_CORE_STATS_HISTOGRAM_COLLECTOR_H_
#define QUANTD_CORE_STATS_HISTOGRAM_COLLECTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/graph/tensor.h"
#include "core/quantizers/types.h"

namespace quantd::stats {

class HistogramCollector {
 public:
  explicit HistogramCollector(int n_bins = quantizers::kHistogramBins);

  // Adds one batch. `name` (the tensor's name) is used in error messages:
  // empty tensors, NaN/Inf values and ranges whose float32 width overflows
  // (np.histogram fails on them) are rejected.
  absl::Status Update(absl::Span<const float> values, absl::string_view name);
  absl::Status Update(const Tensor& tensor, absl::string_view name);

  // The merged histogram; an error before the first batch.
  absl::StatusOr<quantizers::Histogram> GetHistogram() const;
  // The single np.histogram of batch i (float32 edges, integer counts).
  const quantizers::Histogram& batch(int i) const { return batches_[i]; }
  int num_batches() const { return static_cast<int>(batches_.size()); }

 private:
  int n_bins_;
  std::vector<quantizers::Histogram> batches_;
};

// Merge rule above, exposed for tests: batches must be single histograms
// with float32 edges. An error when max - min of the edges overflows float32
// (NumPy's arange cannot compute a length there; MCT raises).
absl::StatusOr<quantizers::Histogram> MergeHistograms(
    const std::vector<quantizers::Histogram>& batches, int n_bins);

// The merge in two steps, for MergeBatches (batch_histogram.h): the grid
// from the float32 min and max of every batch's edges, with zero counts (an
// error when max - min overflows float32); then one batch's counts,
// interpolated onto it and added.
absl::StatusOr<quantizers::Histogram> MergeGrid(float mn, float mx, int n_bins);
void AddInterpolated(const std::vector<double>& edges,
                     const std::vector<double>& counts,
                     quantizers::Histogram* merged);

// Checks values are finite; the error names the tensor and the first bad
// element.
absl::Status CheckFinite(absl::Span<const float> values,
                         absl::string_view name);

// A float copy of any numeric tensor (float tensors are not copied twice).
absl::StatusOr<std::vector<float>> TensorValues(const Tensor& tensor,
                                                absl::string_view name);

}  // namespace quantd::stats

#endif  // QUANTD_CORE_STATS_HISTOGRAM_COLLECTOR_H_
