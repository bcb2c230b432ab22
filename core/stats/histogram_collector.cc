#include "core/stats/histogram_collector.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/quantizers/internal/numpy_compat.h"
#include "core/stats/batch_histogram.h"

namespace quantd::stats {

absl::Status CheckFinite(absl::Span<const float> values,
                         absl::string_view name) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "': ", std::isnan(values[i]) ? "NaN" : "Inf",
          " at element ", i, "; statistics need finite values"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> TensorValues(const Tensor& tensor,
                                                absl::string_view name) {
  if (tensor.dtype() == DType::kFloat) {
    auto s = tensor.span<float>();
    return std::vector<float>(s.begin(), s.end());
  }
  auto cast = tensor.CastToFloat();
  if (!cast.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, "': cannot collect statistics of ",
        DTypeName(tensor.dtype()), " values: ", cast.status().message()));
  }
  auto s = cast->span<float>();
  return std::vector<float>(s.begin(), s.end());
}

HistogramCollector::HistogramCollector(int n_bins) : n_bins_(n_bins) {}

absl::Status HistogramCollector::Update(absl::Span<const float> values,
                                        absl::string_view name) {
  auto batch = HistogramOfBatch(values, n_bins_, name);
  if (!batch.ok()) return batch.status();
  batches_.push_back(batch->ToHistogram());
  return absl::OkStatus();
}

absl::Status HistogramCollector::Update(const Tensor& tensor,
                                        absl::string_view name) {
  if (tensor.dtype() == DType::kFloat)
    return Update(tensor.span<float>(), name);
  auto values = TensorValues(tensor, name);
  if (!values.ok()) return values.status();
  return Update(*values, name);
}

absl::StatusOr<quantizers::Histogram> HistogramCollector::GetHistogram() const {
  if (batches_.empty()) {
    return absl::FailedPreconditionError("no batch was collected");
  }
  return MergeHistograms(batches_, n_bins_);
}

namespace {

// np.interp(x, xp, fp) (quantizers::internal::Interp) for x and xp both
// non-decreasing: the bracketing index j (the largest with xp[j] <= x[i]) by
// one walk along xp instead of a binary search per point; the same
// arithmetic per point.
std::vector<double> InterpSorted(const std::vector<double>& x,
                                 const std::vector<double>& xp,
                                 const std::vector<double>& fp) {
  const int64_t lenxp = static_cast<int64_t>(xp.size());
  const double lval = fp.front(), rval = fp.back();
  std::vector<double> res(x.size());
  int64_t j = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (v < xp[0]) {
      res[i] = lval;
      continue;
    }
    if (v > xp[lenxp - 1]) {
      res[i] = rval;
      continue;
    }
    while (j + 1 < lenxp && xp[j + 1] <= v) ++j;
    if (j == lenxp - 1 || xp[j] == v) {
      res[i] = fp[j];
      continue;
    }
    const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    res[i] = slope * (v - xp[j]) + fp[j];
    if (std::isnan(res[i])) {
      res[i] = slope * (v - xp[j + 1]) + fp[j + 1];
      if (std::isnan(res[i]) && fp[j] == fp[j + 1]) res[i] = fp[j];
    }
  }
  return res;
}

}  // namespace

absl::StatusOr<quantizers::Histogram> MergeGrid(float mn, float mx,
                                                int n_bins) {
  // max - min is a float32 subtraction (NumPy scalars), its quotient by
  // n_bins float64. The grid is np.arange of float64 scalars (NumPy 1.24's
  // PyArray_ArangeObj): length ceil((stop - start) / w), edge 0 = start,
  // edge 1 = start + w, then DOUBLE_fill: start + i * ((start + w) - start).
  // Subtracting in float64 gave 2049 edges where MCT has 2050 in ~1 case of
  // 5 (tests/core/stats/testdata/make_merge_grid.py runs MCT's code).
  const float width = mx - mn;
  if (!std::isfinite(width) || !(width > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "histogram range [", mn, ", ", mx,
        "] is wider than float32 allows (MCT's merge fails on it)"));
  }
  const double start = mn;
  const double w = static_cast<double>(width) / n_bins;
  const double stop = static_cast<double>(mx) + w;
  const int64_t length = static_cast<int64_t>(std::ceil((stop - start) / w));
  quantizers::Histogram out;
  out.edges.resize(length);
  out.edges[0] = start;
  if (length > 1) out.edges[1] = start + w;
  const double delta = (start + w) - start;
  for (int64_t i = 2; i < length; ++i) {
    out.edges[i] = start + static_cast<double>(i) * delta;
  }
  out.counts.assign(out.edges.size() - 1, 0.0);
  out.float32_edges = false;
  return out;
}

void AddInterpolated(const std::vector<double>& edges,
                     const std::vector<double>& counts,
                     quantizers::Histogram* merged) {
  std::vector<double> cum(counts.size() + 1, 0.0);
  for (size_t i = 0; i < counts.size(); ++i) cum[i + 1] = cum[i] + counts[i];
  const std::vector<double> at = InterpSorted(merged->edges, edges, cum);
  for (size_t i = 0; i + 1 < at.size(); ++i) {
    merged->counts[i] += at[i + 1] - at[i];
  }
}

absl::StatusOr<quantizers::Histogram> MergeHistograms(
    const std::vector<quantizers::Histogram>& batches, int n_bins) {
  if (batches.empty()) {
    return absl::FailedPreconditionError("no batch to merge");
  }
  // Float32 scalars throughout, as NumPy computes them from float32 edges.
  float mn = static_cast<float>(batches[0].edges.front());
  float mx = static_cast<float>(batches[0].edges.back());
  for (const auto& b : batches) {
    for (double e : b.edges) {
      mn = std::min(mn, static_cast<float>(e));
      mx = std::max(mx, static_cast<float>(e));
    }
  }
  auto out = MergeGrid(mn, mx, n_bins);
  if (!out.ok()) return out.status();
  for (const auto& b : batches) AddInterpolated(b.edges, b.counts, &*out);
  return out;
}

}  // namespace quantd::stats
