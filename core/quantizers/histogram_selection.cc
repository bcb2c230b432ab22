// Activation parameter selection from histograms:
// power_of_two_selection_histogram, symmetric_selection_histogram,
// uniform_selection_histogram and the *_no_clipping_selection_min_max
// variants (MCT 2.3.0).
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/quantizers/error_functions.h"
#include "core/quantizers/internal/errors.h"
#include "core/quantizers/internal/kernels.h"
#include "core/quantizers/internal/search.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/selection.h"
#include "core/util/status_macros.h"

namespace quantd::quantizers {
namespace {

absl::Status ValidateOptions(const HistogramSearchOptions& o) {
  if (o.n_bits < 1 || o.n_bits > 30) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_bits must be in [1, 30], got ", o.n_bits));
  }
  if (o.error_method == ErrorMethod::kLp && !(o.p > 0)) {
    return absl::InvalidArgumentError("LP error needs p > 0");
  }
  if (o.error_method == ErrorMethod::kHmse) {
    return absl::InvalidArgumentError(
        "HMSE on activations needs a Hessian-weighted histogram: pass it as "
        "the histogram and use MSE");
  }
  return absl::OkStatus();
}

// Quantized edges with NumPy's dtype: float32 edges with a scalar parameter
// compute in float32, float64 edges in float64. p_f32 marks a float32
// parameter (np.float32 scalar or array).
template <typename Grid64, typename Grid32>
std::vector<double> QuantizeEdges(const Histogram& h, bool p_f32,
                                  const Grid64& g64, const Grid32& g32) {
  std::vector<double> q(h.edges.size());
  if (h.float32_edges) {
    const auto g = p_f32 ? g32() : g64.template operator()<float>();
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = internal::QuantizeOne(static_cast<float>(h.edges[i]), g);
    }
  } else {
    const auto g = g64.template operator()<double>();
    for (size_t i = 0; i < q.size(); ++i)
      q[i] = internal::QuantizeOne(h.edges[i], g);
  }
  return q;
}

std::vector<double> SymmetricEdges(const Histogram& h, double t, int n_bits,
                                   bool is_signed, bool p_f32) {
  return QuantizeEdges(
      h, p_f32,
      [&]<typename D>() {
        return internal::SymmetricGrid<double, D>(t, n_bits, is_signed);
      },
      [&]() {
        return internal::SymmetricGrid<float, float>(static_cast<float>(t),
                                                     n_bits, is_signed);
      });
}

std::vector<double> UniformEdges(const Histogram& h, double a, double b,
                                 int n_bits, bool p_f32) {
  return QuantizeEdges(
      h, p_f32,
      [&]<typename D>() {
        return internal::UniformGrid<double, D>(a, b, n_bits);
      },
      [&]() {
        return internal::UniformGrid<float, float>(
            static_cast<float>(a), static_cast<float>(b), n_bits);
      });
}

double Error(const Histogram& h, const HistogramSearchOptions& o,
             const std::vector<double>& q, double kl_min, double kl_max) {
  if (o.error_method == ErrorMethod::kKl) {
    return KlHistogramError(h, q, kl_min, kl_max);
  }
  return HistogramError(o.error_method, h, q, o.p);
}

// max(|edges[1:]| where counts > 0).
double MaxAbsNonEmpty(const Histogram& h) {
  double m = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] > 0) m = std::max(m, std::abs(h.edges[i + 1]));
  }
  return m;
}

// any(edges[:-1][counts != 0] < 0).
bool NaturalSigned(const Histogram& h) {
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] != 0 && h.edges[i] < 0) return true;
  }
  return false;
}

Histogram MinMaxHistogram(double min_value, double max_value) {
  return Histogram{{min_value, max_value}, {1.0}, false};
}

}  // namespace

absl::Status ValidateHistogram(const Histogram& h) {
  if (h.counts.empty() || h.edges.size() != h.counts.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "histogram needs edges = counts + 1 >= 2, got ", h.edges.size(),
        " edges and ", h.counts.size(), " counts"));
  }
  bool any = false;
  for (size_t i = 0; i < h.edges.size(); ++i) {
    if (!std::isfinite(h.edges[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram edge ", i, " is not finite"));
    }
    if (i > 0 && h.edges[i] < h.edges[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram edges decrease at index ", i));
    }
  }
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (!(h.counts[i] >= 0) || !std::isfinite(h.counts[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram count ", i, " is negative or not finite"));
    }
    any |= h.counts[i] > 0;
  }
  if (!any) return absl::InvalidArgumentError("histogram is empty");
  return absl::OkStatus();
}

absl::StatusOr<ActivationThreshold> PowerOfTwoSelectionHistogram(
    const Histogram& h, const HistogramSearchOptions& o) {
  RETURN_IF_ERROR(ValidateOptions(o));
  RETURN_IF_ERROR(ValidateHistogram(h));
  ActivationThreshold out;
  out.is_signed = o.is_signed.has_value() ? *o.is_signed : NaturalSigned(h);
  if (o.error_method == ErrorMethod::kNoClipping) {
    out.threshold = MaxPowerOfTwo(MaxAbsNonEmpty(h), o.min_threshold);
    return out;
  }
  double tensor_max = 0;
  for (double e : h.edges) tensor_max = std::max(tensor_max, std::abs(e));
  if (!o.constrained) {
    out.threshold = tensor_max;
    return out;
  }
  const double t0 = 2 * MaxPowerOfTwo(tensor_max, o.min_threshold);
  const int n_iter = std::max(o.n_iter, 1);
  std::vector<double> errors(n_iter), thresholds(n_iter);
  for (int i = 0; i < n_iter; ++i) {
    thresholds[i] = t0 / std::pow(2.0, static_cast<double>(i));
    const auto q =
        SymmetricEdges(h, thresholds[i], o.n_bits, out.is_signed, false);
    // KL evaluates [-T, T] whatever the sign (MCT's behaviour).
    errors[i] = Error(h, o, q, -thresholds[i], thresholds[i]);
  }
  out.threshold = std::max(thresholds[internal::ArgMin(errors.data(), n_iter)],
                           o.min_threshold);
  return out;
}

absl::StatusOr<ActivationThreshold> SymmetricSelectionHistogram(
    const Histogram& h, const HistogramSearchOptions& o) {
  RETURN_IF_ERROR(ValidateOptions(o));
  RETURN_IF_ERROR(ValidateHistogram(h));
  ActivationThreshold out;
  const double tensor_max = MaxAbsNonEmpty(h);
  if (o.error_method == ErrorMethod::kNoClipping) {
    out.threshold = std::max(o.min_threshold, tensor_max);
    if (o.is_signed.has_value()) {
      out.is_signed = *o.is_signed;
    } else {
      out.is_signed = false;
      for (double e : h.edges) out.is_signed |= e < 0;
    }
    return out;
  }
  out.is_signed = o.is_signed.has_value() ? *o.is_signed : NaturalSigned(h);
  const bool s = out.is_signed;
  auto loss = [&](double t, bool f32) {
    const auto q = SymmetricEdges(h, t, o.n_bits, s, f32);
    return Error(h, o, q, s ? -t : 0.0, t);
  };
  // max(python float, np.float32) keeps the float32 scalar of float32 edges.
  const bool x0_f32 = h.float32_edges && tensor_max >= o.min_threshold;
  const double x0 = std::max(o.min_threshold, tensor_max);
  const double t = internal::SymmetricMinimize(
      x0, x0_f32, loss, kSymmetricNIntervals, kSymmetricHistogramNIter,
      kSymmetricHistogramDecFreq);
  out.threshold = std::max(o.min_threshold, t);
  return out;
}

absl::StatusOr<ActivationRange> UniformSelectionHistogram(
    const Histogram& h, const HistogramSearchOptions& o) {
  RETURN_IF_ERROR(ValidateOptions(o));
  RETURN_IF_ERROR(ValidateHistogram(h));
  double tmin = std::numeric_limits<double>::infinity();
  double tmax = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] > 0) {
      tmin = std::min(tmin, h.edges[i]);
      tmax = std::max(tmax, h.edges[i + 1]);
    }
  }
  ActivationRange out;
  out.is_signed = o.is_signed.has_value() ? *o.is_signed : tmin < 0;
  if (o.error_method == ErrorMethod::kNoClipping) {
    out.range_min = tmin;
    out.range_max = tmax;
    return out;
  }
  auto loss = [&](double a, double b, bool f32) {
    const auto q = UniformEdges(h, a, b, o.n_bits, f32);
    return Error(h, o, q, a, b);
  };
  const auto r = internal::UniformMinimize(
      {tmin, tmax}, h.float32_edges,
      internal::UniformScalers(kUniformHistogramNSamples), loss,
      kUniformHistogramNIter);
  out.range_min = r[0];
  out.range_max = r[1];
  return out;
}

absl::StatusOr<ActivationThreshold> PowerOfTwoNoClippingSelectionMinMax(
    double min_value, double max_value, const HistogramSearchOptions& options) {
  HistogramSearchOptions o = options;
  o.error_method = ErrorMethod::kNoClipping;
  return PowerOfTwoSelectionHistogram(MinMaxHistogram(min_value, max_value), o);
}

absl::StatusOr<ActivationThreshold> SymmetricNoClippingSelectionMinMax(
    double min_value, double max_value, const HistogramSearchOptions& options) {
  HistogramSearchOptions o = options;
  o.error_method = ErrorMethod::kNoClipping;
  return SymmetricSelectionHistogram(MinMaxHistogram(min_value, max_value), o);
}

absl::StatusOr<ActivationRange> UniformNoClippingSelectionMinMax(
    double min_value, double max_value, const HistogramSearchOptions& options) {
  HistogramSearchOptions o = options;
  o.error_method = ErrorMethod::kNoClipping;
  return UniformSelectionHistogram(MinMaxHistogram(min_value, max_value), o);
}

}  // namespace quantd::quantizers
