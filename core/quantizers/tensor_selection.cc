// Weights parameter selection: power_of_two_selection_tensor,
// symmetric_selection_tensor, uniform_selection_tensor (MCT 2.3.0).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/quantizers/error_functions.h"
#include "core/quantizers/internal/errors.h"
#include "core/quantizers/internal/kernels.h"
#include "core/quantizers/internal/mse_search.h"
#include "core/quantizers/internal/quantized_mse.h"
#include "core/quantizers/internal/search.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/selection.h"
#include "core/runtime/cancellation.h"
#include "core/util/status_macros.h"

namespace quantd::quantizers {
namespace {

using internal::Grid;
using internal::RangeKind;

absl::Status ValidateTensor(const TensorView& tensor,
                            const WeightsSearchOptions& options) {
  if (options.n_bits < 1 || options.n_bits > 30) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_bits must be in [1, 30], got ", options.n_bits));
  }
  if (tensor.data.empty()) {
    return absl::InvalidArgumentError("weights tensor is empty");
  }
  int64_t total = 1;
  for (int64_t d : tensor.shape) {
    if (d <= 0) {
      return absl::InvalidArgumentError(
          "weights tensor has a non-positive dim");
    }
    total *= d;
  }
  if (total != static_cast<int64_t>(tensor.data.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights tensor has ", tensor.data.size(),
                     " values, shape holds ", total));
  }
  for (float v : tensor.data) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError("weights tensor has NaN or Inf values");
    }
  }
  if (options.error_method == ErrorMethod::kHmse &&
      options.hessian_scores.size() != tensor.data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("HMSE needs one Hessian score per weight: got ",
                     options.hessian_scores.size(), " for ", tensor.data.size(),
                     " weights"));
  }
  if (options.error_method == ErrorMethod::kLp && !(options.p > 0)) {
    return absl::InvalidArgumentError("LP error needs p > 0");
  }
  if (options.per_channel && options.channel_axis.has_value() &&
      (*options.channel_axis < 0 ||
       *options.channel_axis >= static_cast<int>(tensor.shape.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel axis ", *options.channel_axis, " out of range for a rank-",
        tensor.shape.size(), " tensor"));
  }
  return absl::OkStatus();
}

// MCT's uniform weights search does not pass n_bits to its KL error, whose
// default is 8.
constexpr int kUniformKlBits = 8;
constexpr bool kPotPerChannelKlOnQuantized = false;
constexpr RangeKind kSymmetricPerChannelKlKind = RangeKind::kF64Array;
// MCT hands each channel its range row, whose elements are float64 scalars.
constexpr RangeKind kUniformPerChannelKlKind = RangeKind::kScalar;

// The float tensor reshaped for one axis, with the float64 copy and the
// matching Hessian rows.
struct Channels {
  PerChannelMatrix m;
  std::vector<double> m64;
  PerChannelMatrix hessian;
  std::vector<internal::KlHistogram> kl;  // per channel, KL searches only
  const internal::KlHistogram* klrow(int64_t c) const {
    return kl.empty() ? nullptr : &kl[c];
  }
  const float* row(int64_t c) const { return m.data.data() + c * m.cols; }
  const double* row64(int64_t c) const { return m64.data() + c * m.cols; }
  const float* hrow(int64_t c) const {
    return hessian.data.empty() ? nullptr : hessian.data.data() + c * m.cols;
  }
};

absl::StatusOr<Channels> MakeChannels(const TensorView& tensor, int axis,
                                      const WeightsSearchOptions& options) {
  Channels ch;
  ASSIGN_OR_RETURN(ch.m, ReshapeForPerChannel(tensor, axis));
  ch.m64.assign(ch.m.data.begin(), ch.m.data.end());
  if (!options.hessian_scores.empty()) {
    ASSIGN_OR_RETURN(
        ch.hessian,
        ReshapeForPerChannel(TensorView{options.hessian_scores, tensor.shape},
                             axis));
  }
  if (options.error_method == ErrorMethod::kKl) {
    for (int64_t c = 0; c < ch.m.channels; ++c) {
      ch.kl.push_back(internal::MakeKlHistogram(ch.row(c), ch.m.cols));
    }
  }
  return ch;
}

// Error of one float32 row quantized on grid g (KL: range [lo, hi]).
// The KL error quantizes the histogram edges with kl_bits (MCT does not pass
// n_bits for uniform weights, so 8 is used there); kl_hist is the histogram
// of the float row, or null to histogram the quantized row.
struct KlSetup {
  int bits = 8;
  const internal::KlHistogram* hist = nullptr;
};

// A search's time goes into these row errors: a cancelled one stops here
// (WeightsSearchOptions::cancel).
bool Cancelled(const WeightsSearchOptions& o) {
  return o.cancel != nullptr && o.cancel->IsCancelled();
}

double RowErrorF32(const WeightsSearchOptions& o, const float* x, int64_t n,
                   const float* h, const Grid<float>& g, double kl_min,
                   double kl_max, RangeKind kl_kind, const KlSetup& kl) {
  if (Cancelled(o)) return 0.0;
  if (o.error_method == ErrorMethod::kKl && kl.hist != nullptr) {
    return internal::KlTensorErrorFromHistogram(*kl.hist, kl_min, kl_max,
                                                kl.bits, kl_kind);
  }
  if (o.error_method == ErrorMethod::kMse)
    return internal::QuantizedMse(x, n, g);
  thread_local std::vector<float> q, scratch;
  q.resize(n);
  internal::QuantizeRow(x, n, g, q.data());
  if (o.error_method == ErrorMethod::kKl) {
    return internal::KlTensorErrorImpl(q.data(), n, kl_min, kl_max, kl.bits,
                                       kl_kind);
  }
  return internal::PointwiseError<float>(o.error_method, x, q.data(), n, o.p, h,
                                         &scratch);
}

double RowErrorF64(const WeightsSearchOptions& o, const double* x,
                   const float* x32, int64_t n, const float* h,
                   const Grid<double>& g, double kl_min, double kl_max,
                   RangeKind kl_kind, const KlSetup& kl) {
  if (Cancelled(o)) return 0.0;
  if (o.error_method == ErrorMethod::kKl) {
    if (kl.hist != nullptr) {
      return internal::KlTensorErrorFromHistogram(*kl.hist, kl_min, kl_max,
                                                  kl.bits, kl_kind);
    }
    return internal::KlTensorErrorImpl(x32, n, kl_min, kl_max, kl.bits,
                                       kl_kind);
  }
  if (o.error_method == ErrorMethod::kMse)
    return internal::QuantizedMse(x, n, g);
  thread_local std::vector<double> q, scratch;
  q.resize(n);
  internal::QuantizeRow(x, n, g, q.data());
  return internal::PointwiseError<double>(o.error_method, x, q.data(), n, o.p,
                                          h, &scratch);
}

// compute_mse(x, q, norm=True) of the whole tensor quantized per channel
// along an axis: the criterion of MCT's automatic axis search.
double NormalizedMse(const Channels& ch, const std::vector<float>& q) {
  double num = 0, den = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const double x = ch.m.data[i];
    num += (x - q[i]) * (x - q[i]);
    den += x * x;
  }
  const double n = static_cast<double>(q.size());
  return (num / n) / (den / n + 1e-8);
}

std::vector<float> QuantizeChannelsSymmetric(const Channels& ch,
                                             const std::vector<double>& t,
                                             int n_bits) {
  std::vector<float> q(ch.m.data.size());
  for (int64_t c = 0; c < ch.m.channels; ++c) {
    const auto g = internal::SymmetricGrid<double, double>(t[c], n_bits, true);
    for (int64_t k = 0; k < ch.m.cols; ++k) {
      q[c * ch.m.cols + k] =
          static_cast<float>(internal::QuantizeOne<double>(ch.row64(c)[k], g));
    }
  }
  return q;
}

std::vector<float> QuantizeChannelsUniform(const Channels& ch,
                                           const RangeParams& r, int n_bits) {
  std::vector<float> q(ch.m.data.size());
  for (int64_t c = 0; c < ch.m.channels; ++c) {
    const auto g = internal::UniformGrid<double, double>(
        r.range_min[c], r.range_max[c], n_bits);
    for (int64_t k = 0; k < ch.m.cols; ++k) {
      q[c * ch.m.cols + k] =
          static_cast<float>(internal::QuantizeOne<double>(ch.row64(c)[k], g));
    }
  }
  return q;
}

// ---- power of two ----------------------------------------------------------

absl::StatusOr<ThresholdParams> PowerOfTwoForAxis(const TensorView& tensor,
                                                  const WeightsSearchOptions& o,
                                                  int axis,
                                                  double* search_error) {
  const int n_bits = o.n_bits;
  ASSIGN_OR_RETURN(std::vector<double> tmax,
                   GetTensorMax(tensor, o.per_channel, axis, n_bits));
  ThresholdParams out;
  out.channel_axis = axis;
  if (o.error_method == ErrorMethod::kNoClipping) {
    for (double& t : tmax) {
      t = o.per_channel
              ? MaxPowerOfTwoF32(static_cast<float>(t), o.min_threshold)
              : MaxPowerOfTwo(t, o.min_threshold);
    }
    out.threshold = std::move(tmax);
    return out;
  }
  const int n_iter = std::max(o.n_iter, 1);
  if (!o.per_channel) {
    const double t0 = 2 * MaxPowerOfTwo(tmax[0], o.min_threshold);
    std::vector<double> errors(n_iter);
    const int64_t n = static_cast<int64_t>(tensor.data.size());
    const float* h =
        o.hessian_scores.empty() ? nullptr : o.hessian_scores.data();
    for (int i = 0; i < n_iter; ++i) {
      const double t = t0 / std::pow(2.0, i);
      const auto g = internal::SymmetricGrid<double, float>(t, n_bits, true);
      // MCT passes (quantized, float) here, so KL histograms the quantized
      // tensor.
      errors[i] = RowErrorF32(o, tensor.data.data(), n, h, g, -t, t,
                              RangeKind::kScalar, KlSetup{n_bits, nullptr});
    }
    const int64_t best = internal::ArgMin(errors.data(), n_iter);
    out.threshold = {std::max(t0 / std::pow(2.0, static_cast<double>(best)),
                              o.min_threshold)};
    return out;
  }
  ASSIGN_OR_RETURN(Channels ch, MakeChannels(tensor, axis, o));
  const int64_t channels = ch.m.channels;
  out.threshold.resize(channels);
  std::vector<double> best_errors(channels);
  auto pot_pc_kl = [&](int64_t c) {
    return KlSetup{n_bits, kPotPerChannelKlOnQuantized ? nullptr : ch.klrow(c)};
  };
  internal::ForEachChannel(channels, o.pool, [&](int64_t c) {
    const float t0 =
        2.0f * MaxPowerOfTwoF32(static_cast<float>(tmax[c]), o.min_threshold);
    std::vector<double> errors(n_iter);
    for (int i = 0; i < n_iter; ++i) {
      const float t = t0 / static_cast<float>(std::pow(2.0, i));
      const auto g = internal::SymmetricGrid<float, float>(t, n_bits, true);
      errors[i] = RowErrorF32(o, ch.row(c), ch.m.cols, ch.hrow(c), g, -t, t,
                              RangeKind::kF32Array, pot_pc_kl(c));
    }
    const int64_t best = internal::ArgMin(errors.data(), n_iter);
    best_errors[c] = errors[best];
    out.threshold[c] = std::max(
        static_cast<double>(t0) / std::pow(2.0, static_cast<double>(best)),
        o.min_threshold);
  });
  if (search_error != nullptr) {
    // np.mean over the float32 per-channel errors of the chosen thresholds.
    std::vector<float> e32(best_errors.begin(), best_errors.end());
    *search_error = internal::Mean(e32.data(), channels);
  }
  return out;
}

// ---- symmetric -------------------------------------------------------------

// The MSE searches skip candidates that QuantizedMseExceeds proves worse,
// from each channel's extremes (the clipped values a proof needs: 16 at
// each end suffice on MobileNetV2), in PrunedMseArgMin's loop (no call per
// candidate). Other errors search every candidate.
internal::ChannelPruning MsePruning(const WeightsSearchOptions& o,
                                    const Channels& ch, int n_bits) {
  if (o.error_method != ErrorMethod::kMse) return {};
  constexpr int64_t kExtremes = 16;
  const int64_t cols = ch.m.cols;
  const int64_t m = std::min<int64_t>(cols, 2 * kExtremes);
  auto extremes = std::make_shared<std::vector<double>>(ch.m.channels * m);
  for (int64_t c = 0; c < ch.m.channels; ++c) {
    const std::vector<double> e =
        internal::RowExtremes(ch.row64(c), cols, kExtremes);
    std::copy(e.begin(), e.end(), extremes->begin() + c * m);
  }
  internal::ChannelPruning p;
  p.argmin = [&o, &ch, extremes, m, cols, n_bits](
                 int64_t c, const std::vector<double>& cands, double* loss) {
    // A cancelled search's losses are all 0 (RowErrorF64): the first wins.
    if (Cancelled(o)) {
      *loss = 0;
      return 0;
    }
    return internal::PrunedMseArgMin(
        ch.row64(c), cols, extremes->data() + c * m, m, cands.data(),
        static_cast<int>(cands.size()), n_bits, loss);
  };
  return p;
}

absl::StatusOr<ThresholdParams> SymmetricForAxis(const TensorView& tensor,
                                                 const WeightsSearchOptions& o,
                                                 int axis, double*) {
  const int n_bits = o.n_bits;
  ASSIGN_OR_RETURN(std::vector<double> tmax,
                   GetTensorMax(tensor, o.per_channel, axis, n_bits));
  ThresholdParams out;
  out.channel_axis = axis;
  if (o.error_method == ErrorMethod::kNoClipping) {
    for (double& t : tmax) t = std::max(t, o.min_threshold);
    out.threshold = std::move(tmax);
    return out;
  }
  if (!o.per_channel) {
    const int64_t n = static_cast<int64_t>(tensor.data.size());
    const float* x = tensor.data.data();
    const float* h =
        o.hessian_scores.empty() ? nullptr : o.hessian_scores.data();
    internal::KlHistogram kl_hist;
    if (o.error_method == ErrorMethod::kKl)
      kl_hist = internal::MakeKlHistogram(x, n);
    const KlSetup kl{n_bits, &kl_hist};
    auto loss = [&](double t, bool f32) {
      if (f32) {
        const float tf = static_cast<float>(t);
        return RowErrorF32(
            o, x, n, h, internal::SymmetricGrid<float, float>(tf, n_bits, true),
            -tf, tf, RangeKind::kF32Array, kl);
      }
      return RowErrorF32(
          o, x, n, h, internal::SymmetricGrid<double, float>(t, n_bits, true),
          -t, t, RangeKind::kScalar, kl);
    };
    const double x0 = std::max(o.min_threshold, tmax[0]);
    const double t = internal::SymmetricMinimize(
        x0, false, loss, kSymmetricNIntervals, kSymmetricTensorNIter,
        kSymmetricTensorDecFreq);
    out.threshold = {std::max(o.min_threshold, t)};
    return out;
  }
  ASSIGN_OR_RETURN(Channels ch, MakeChannels(tensor, axis, o));
  std::vector<double> x0(tmax.size());
  for (size_t c = 0; c < x0.size(); ++c) {
    // np.maximum(python float, float32 array) stays float32.
    x0[c] = std::max(static_cast<float>(tmax[c]),
                     static_cast<float>(o.min_threshold));
  }
  auto loss = [&](int64_t c, double t, bool f32) {
    if (f32) {
      const float tf = static_cast<float>(t);
      return RowErrorF32(
          o, ch.row(c), ch.m.cols, ch.hrow(c),
          internal::SymmetricGrid<float, float>(tf, n_bits, true), -tf, tf,
          RangeKind::kF32Array, KlSetup{n_bits, ch.klrow(c)});
    }
    return RowErrorF64(o, ch.row64(c), ch.row(c), ch.m.cols, ch.hrow(c),
                       internal::SymmetricGrid<double, double>(t, n_bits, true),
                       -t, t, kSymmetricPerChannelKlKind,
                       KlSetup{n_bits, ch.klrow(c)});
  };
  std::vector<double> t = internal::SymmetricMinimizePerChannel(
      x0, true, loss, kSymmetricNIntervals, kSymmetricTensorPerChannelNIter,
      kSymmetricTensorPerChannelDecFreq, o.pool, MsePruning(o, ch, n_bits));
  for (double& v : t) v = std::max(o.min_threshold, v);
  out.threshold = std::move(t);
  return out;
}

// ---- uniform ---------------------------------------------------------------

absl::StatusOr<RangeParams> UniformForAxis(const TensorView& tensor,
                                           const WeightsSearchOptions& o,
                                           int axis, double*) {
  const int n_bits = o.n_bits;
  ASSIGN_OR_RETURN(std::vector<double> tmin,
                   GetTensorMin(tensor, o.per_channel, axis));
  ASSIGN_OR_RETURN(std::vector<double> tmax,
                   GetTensorMax(tensor, o.per_channel, axis, n_bits, true));
  RangeParams out;
  out.channel_axis = axis;
  if (o.error_method == ErrorMethod::kNoClipping) {
    out.range_min = std::move(tmin);
    out.range_max = std::move(tmax);
    if (!o.per_channel) {
      // Scalars: min > 0 -> 0, max < 0 -> 0.
      if (out.range_min[0] > 0) out.range_min[0] = 0;
      if (out.range_max[0] < 0) out.range_max[0] = 0;
      return out;
    }
  } else if (!o.per_channel) {
    const int64_t n = static_cast<int64_t>(tensor.data.size());
    const float* x = tensor.data.data();
    const float* h =
        o.hessian_scores.empty() ? nullptr : o.hessian_scores.data();
    internal::KlHistogram kl_hist;
    if (o.error_method == ErrorMethod::kKl)
      kl_hist = internal::MakeKlHistogram(x, n);
    const KlSetup kl{kUniformKlBits, &kl_hist};
    auto loss = [&](double a, double b, bool f32) {
      if (f32) {
        const float af = static_cast<float>(a), bf = static_cast<float>(b);
        return RowErrorF32(o, x, n, h,
                           internal::UniformGrid<float, float>(af, bf, n_bits),
                           af, bf, RangeKind::kF32Array, kl);
      }
      return RowErrorF32(o, x, n, h,
                         internal::UniformGrid<double, float>(a, b, n_bits), a,
                         b, RangeKind::kScalar, kl);
    };
    const auto r = internal::UniformMinimize(
        {tmin[0], tmax[0]}, false,
        internal::UniformScalers(kUniformTensorNSamples), loss,
        kUniformTensorNIter);
    out.range_min = {r[0]};
    out.range_max = {r[1]};
  } else {
    ASSIGN_OR_RETURN(Channels ch, MakeChannels(tensor, axis, o));
    std::vector<std::array<double, 2>> x0(tmin.size());
    for (size_t c = 0; c < x0.size(); ++c) x0[c] = {tmin[c], tmax[c]};
    auto loss = [&](int64_t c, double a, double b, bool f32) {
      if (f32) {
        const float af = static_cast<float>(a), bf = static_cast<float>(b);
        // The KL error gets each channel's range as np.float32 scalars, and
        // NumPy 1.24 computes np.float32 scalar / python int in float64.
        return RowErrorF32(o, ch.row(c), ch.m.cols, ch.hrow(c),
                           internal::UniformGrid<float, float>(af, bf, n_bits),
                           af, bf, RangeKind::kScalar,
                           KlSetup{kUniformKlBits, ch.klrow(c)});
      }
      return RowErrorF64(o, ch.row64(c), ch.row(c), ch.m.cols, ch.hrow(c),
                         internal::UniformGrid<double, double>(a, b, n_bits), a,
                         b, kUniformPerChannelKlKind,
                         KlSetup{kUniformKlBits, ch.klrow(c)});
    };
    const auto r = internal::UniformMinimizePerChannel(
        x0, true, internal::UniformScalers(kUniformTensorNSamples), loss,
        kUniformTensorPerChannelNIter, o.pool);
    for (const auto& v : r) {
      out.range_min.push_back(v[0]);
      out.range_max.push_back(v[1]);
    }
  }
  // A single-valued channel (min == max) gets zero into its range.
  for (size_t c = 0; c < out.range_min.size(); ++c) {
    const bool same = out.range_min[c] == out.range_max[c];
    if (same && out.range_min[c] > 0) out.range_min[c] = 0;
    if (same && out.range_max[c] < 0) out.range_max[c] = 0;
  }
  return out;
}

// Tries every axis when per_channel has no axis, as MCT does: power of two
// keeps the axis with the smallest mean (float32) of its per-channel search
// errors, symmetric and uniform the one whose quantized tensor has the
// smallest normalised MSE. Exact ties (common: the quantized tensors are often
// identical) are decided by those sums' last bits, first axis on equality.
template <typename Params, typename ForAxis, typename Quantize>
absl::StatusOr<Params> WithAxisSearch(const TensorView& tensor,
                                      const WeightsSearchOptions& options,
                                      ForAxis for_axis, Quantize quantize) {
  RETURN_IF_ERROR(ValidateTensor(tensor, options));
  if (!options.per_channel || options.channel_axis.has_value()) {
    return for_axis(
        tensor, options,
        options.channel_axis.has_value() ? *options.channel_axis : 0, nullptr);
  }
  double best_error = std::numeric_limits<double>::infinity();
  std::optional<Params> best;
  for (int axis = 0; axis < static_cast<int>(tensor.shape.size()); ++axis) {
    double e = std::numeric_limits<double>::quiet_NaN();
    ASSIGN_OR_RETURN(Params p, for_axis(tensor, options, axis, &e));
    if (std::isnan(e)) {
      ASSIGN_OR_RETURN(Channels ch, MakeChannels(tensor, axis, options));
      e = NormalizedMse(ch, quantize(ch, p, options.n_bits));
    }
    if (!best.has_value() || e < best_error) {
      best_error = e;
      best = std::move(p);
    }
  }
  return *std::move(best);
}

}  // namespace

absl::StatusOr<ThresholdParams> PowerOfTwoSelectionTensor(
    const TensorView& tensor, const WeightsSearchOptions& options) {
  return WithAxisSearch<ThresholdParams>(
      tensor, options, PowerOfTwoForAxis,
      [](const Channels& ch, const ThresholdParams& p, int n_bits) {
        return QuantizeChannelsSymmetric(ch, p.threshold, n_bits);
      });
}

absl::StatusOr<ThresholdParams> SymmetricSelectionTensor(
    const TensorView& tensor, const WeightsSearchOptions& options) {
  return WithAxisSearch<ThresholdParams>(
      tensor, options, SymmetricForAxis,
      [](const Channels& ch, const ThresholdParams& p, int n_bits) {
        return QuantizeChannelsSymmetric(ch, p.threshold, n_bits);
      });
}

absl::StatusOr<RangeParams> UniformSelectionTensor(
    const TensorView& tensor, const WeightsSearchOptions& options) {
  return WithAxisSearch<RangeParams>(
      tensor, options, UniformForAxis,
      [](const Channels& ch, const RangeParams& p, int n_bits) {
        return QuantizeChannelsUniform(ch, p, n_bits);
      });
}

}  // namespace quantd::quantizers
