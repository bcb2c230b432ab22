// Error kernels shared by the searches (see error_functions.h for the API).
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_ERRORS_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_ERRORS_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/quantizers/internal/numpy_compat.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers::internal {

// mean(f(x - q)) accumulated in D with NumPy's pairwise order. `scratch`
// avoids an allocation per call.
template <typename D>
D PointwiseError(ErrorMethod method, const D* x, const D* q, int64_t n,
                 double p, const float* hessian, std::vector<D>* scratch) {
  scratch->resize(n);
  D* t = scratch->data();
  switch (method) {
    case ErrorMethod::kMae:
      for (int64_t i = 0; i < n; ++i) t[i] = std::abs(x[i] - q[i]);
      break;
    case ErrorMethod::kLp: {
      const D pp = static_cast<D>(p);
      for (int64_t i = 0; i < n; ++i)
        t[i] = std::pow(std::abs(x[i] - q[i]), pp);
      break;
    }
    case ErrorMethod::kHmse:
      for (int64_t i = 0; i < n; ++i) {
        const D d = static_cast<D>(hessian[i]) * (x[i] - q[i]);
        t[i] = d * d;
      }
      break;
    default:  // kMse
      for (int64_t i = 0; i < n; ++i) {
        const D d = x[i] - q[i];
        t[i] = d * d;
      }
      break;
  }
  return Mean(t, n);
}

// _kl_error_histogram on edges/q_edges (n_bins + 1 values) and counts.
// cmp_min/cmp_max are the range as the edge comparisons see it (already cast
// to float32 when NumPy would).
double KlHistogramCore(const double* edges, const double* q_edges,
                       const double* counts, int64_t n_bins, double range_min,
                       double range_max, double cmp_min, double cmp_max);

// How a KL tensor error sees its range (NumPy dtype of the range).
enum class RangeKind { kScalar, kF32Array, kF64Array };

// np.histogram(x, bins=2048) of the float tensor, computed once per search.
struct KlHistogram {
  std::vector<double> edges, counts;
  std::vector<int64_t> nonzero;  // bins with a count, ascending
};
KlHistogram MakeKlHistogram(const float* x, int64_t n);

// _kl_error_function on float32 data (or on its precomputed histogram).
double KlTensorErrorImpl(const float* x, int64_t n, double range_min,
                         double range_max, int n_bits, RangeKind kind);
double KlTensorErrorFromHistogram(const KlHistogram& h, double range_min,
                                  double range_max, int n_bits, RangeKind kind);

// sum(f(q - e)[:-1] * counts) / sum(counts) for MSE/MAE/LP; f32_edges
// computes the edge differences in float32 (np.histogram edges).
double HistogramPointError(ErrorMethod method, const double* edges,
                           const double* q_edges, const double* counts,
                           int64_t n_bins, double p, bool f32_edges);

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_ERRORS_H_
