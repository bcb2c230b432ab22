#include "core/quantizers/quantizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/quantizers/internal/kernels.h"
#include "core/quantizers/primitives.h"

namespace quantd::quantizers {
namespace {

// Channel index of every element for parameters along `axis`; all zero for
// per-tensor parameters.
absl::StatusOr<std::vector<int64_t>> ChannelOf(const TensorView& t,
                                               size_t n_params, int axis) {
  int64_t total = 1;
  for (int64_t d : t.shape) total *= d;
  if (total != static_cast<int64_t>(t.data.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor has ", t.data.size(), " values, shape holds ", total));
  }
  std::vector<int64_t> ch(t.data.size(), 0);
  if (n_params == 1) return ch;
  const int rank = static_cast<int>(t.shape.size());
  if (axis < 0 || axis >= rank ||
      t.shape[axis] != static_cast<int64_t>(n_params)) {
    return absl::InvalidArgumentError(absl::StrCat(
        n_params, " quantization parameters do not match channel axis ", axis));
  }
  int64_t inner = 1;
  for (int i = axis + 1; i < rank; ++i) inner *= t.shape[i];
  for (size_t i = 0; i < ch.size(); ++i) {
    ch[i] = (static_cast<int64_t>(i) / inner) % t.shape[axis];
  }
  return ch;
}

// Quantizes with grids in D; `level_offset` maps the grid level to the int.
template <typename D>
void Apply(const TensorView& t, const std::vector<int64_t>& ch,
           const std::vector<internal::Grid<D>>& grids,
           const std::vector<int32_t>& level_offset, QuantizedTensor* out) {
  out->values.resize(t.data.size());
  out->ints.resize(t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i) {
    const auto& g = grids[ch[i]];
    D c = static_cast<D>(t.data[i]);
    if (c < g.lo) c = g.lo;
    if (c > g.hi) c = g.hi;
    const D level = internal::RoundHalfEven((c - g.lo) / g.delta);
    out->values[i] = static_cast<float>(g.delta * level + g.lo);
    out->ints[i] = static_cast<int32_t>(level) + level_offset[ch[i]];
  }
}

}  // namespace

absl::StatusOr<QuantizedTensor> QuantizeSymmetric(
    const TensorView& tensor, absl::Span<const double> thresholds, int axis,
    int n_bits, bool is_signed) {
  if (thresholds.empty() || n_bits < 1 || n_bits > 30) {
    return absl::InvalidArgumentError("bad threshold count or n_bits");
  }
  auto ch = ChannelOf(tensor, thresholds.size(), axis);
  if (!ch.ok()) return ch.status();
  QuantizedTensor out;
  std::vector<int32_t> offset(thresholds.size());
  for (size_t c = 0; c < thresholds.size(); ++c) {
    out.scales.push_back(CalculateDelta(thresholds[c], n_bits, is_signed));
    out.zero_points.push_back(0);
    offset[c] = is_signed ? -(1 << (n_bits - 1)) : 0;
  }
  if (thresholds.size() == 1) {
    Apply<float>(tensor, *ch,
                 {internal::SymmetricGrid<double, float>(thresholds[0], n_bits,
                                                         is_signed)},
                 offset, &out);
  } else {
    std::vector<internal::Grid<double>> grids;
    for (double t : thresholds) {
      grids.push_back(
          internal::SymmetricGrid<double, double>(t, n_bits, is_signed));
    }
    Apply<double>(tensor, *ch, grids, offset, &out);
  }
  return out;
}

absl::StatusOr<QuantizedTensor> QuantizeUniform(
    const TensorView& tensor, absl::Span<const double> range_min,
    absl::Span<const double> range_max, int axis, int n_bits) {
  if (range_min.empty() || range_min.size() != range_max.size() || n_bits < 1 ||
      n_bits > 30) {
    return absl::InvalidArgumentError("bad range count or n_bits");
  }
  auto ch = ChannelOf(tensor, range_min.size(), axis);
  if (!ch.ok()) return ch.status();
  QuantizedTensor out;
  std::vector<int32_t> offset(range_min.size(), 0);
  for (size_t c = 0; c < range_min.size(); ++c) {
    auto [a, b] = FixRangeToIncludeZero(range_min[c], range_max[c], n_bits);
    const double scale =
        (b - a) / static_cast<double>((int64_t{1} << n_bits) - 1);
    out.scales.push_back(scale);
    out.zero_points.push_back(
        scale > 0 ? static_cast<int32_t>(-std::nearbyint(a / scale)) : 0);
  }
  if (range_min.size() == 1) {
    Apply<float>(tensor, *ch,
                 {internal::UniformGrid<double, float>(range_min[0],
                                                       range_max[0], n_bits)},
                 offset, &out);
  } else {
    std::vector<internal::Grid<double>> grids;
    for (size_t c = 0; c < range_min.size(); ++c) {
      grids.push_back(internal::UniformGrid<double, double>(
          range_min[c], range_max[c], n_bits));
    }
    Apply<double>(tensor, *ch, grids, offset, &out);
  }
  return out;
}

absl::StatusOr<QuantizedTensor> QuantizeLut(const TensorView& tensor,
                                            absl::Span<const double> lut_values,
                                            absl::Span<const double> scales,
                                            int axis, bool is_signed) {
  if (lut_values.empty() || scales.empty()) {
    return absl::InvalidArgumentError("LUT quantizer needs values and scales");
  }
  auto ch = ChannelOf(tensor, scales.size(), axis);
  if (!ch.ok()) return ch.status();
  auto x_int = IntQuantizationWithThreshold(
      tensor, scales, axis, kLutValuesBitwidth, is_signed,
      /*thresholds_f32=*/scales.size() > 1);
  if (!x_int.ok()) return x_int.status();
  QuantizedTensor out;
  out.scales.assign(scales.begin(), scales.end());
  out.zero_points.assign(scales.size(), 0);
  out.values.resize(tensor.data.size());
  out.ints.resize(tensor.data.size());
  const float denom =
      static_cast<float>(1 << (kLutValuesBitwidth - (is_signed ? 1 : 0)));
  for (size_t i = 0; i < tensor.data.size(); ++i) {
    const float v = (*x_int)[i];
    size_t best = 0;
    float best_d = std::abs(v - static_cast<float>(lut_values[0]));
    for (size_t k = 1; k < lut_values.size(); ++k) {
      const float d = std::abs(v - static_cast<float>(lut_values[k]));
      if (d < best_d) {
        best_d = d;
        best = k;
      }
    }
    out.ints[i] = static_cast<int32_t>(best);
    const float center = std::nearbyint(static_cast<float>(lut_values[best]));
    out.values[i] = (center / denom) * static_cast<float>(scales[(*ch)[i]]);
  }
  return out;
}

}  // namespace quantd::quantizers
