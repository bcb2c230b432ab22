#include "core/train/quant_grid.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace quantd::train {

absl::Status SetChannelLayout(const std::vector<int64_t>& shape, int axis,
                              QuantGrid* grid) {
  grid->channels = 1;
  grid->inner = 1;
  if (axis < 0) {
    if (grid->scale.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("per-tensor grid with ", grid->scale.size(), " scales"));
    }
    return absl::OkStatus();
  }
  if (axis >= static_cast<int>(shape.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel axis ", axis, " out of range for rank ", shape.size()));
  }
  grid->channels = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) grid->inner *= shape[d];
  if (static_cast<int64_t>(grid->scale.size()) != grid->channels) {
    if (grid->scale.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(grid->scale.size(), " scales for ", grid->channels,
                       " channels on axis ", axis));
    }
    grid->channels = 1;
    grid->inner = 1;
  }
  return absl::OkStatus();
}

QuantGrid SymmetricGrid(const std::vector<double>& thresholds, int n_bits,
                        bool is_signed) {
  QuantGrid g;
  const double levels = std::ldexp(1.0, n_bits - (is_signed ? 1 : 0));
  for (double t : thresholds) {
    g.scale.push_back(t / levels);
    g.zero_point.push_back(0);
  }
  g.qmin = is_signed ? -std::ldexp(1.0, n_bits - 1) : 0;
  g.qmax =
      is_signed ? std::ldexp(1.0, n_bits - 1) - 1 : std::ldexp(1.0, n_bits) - 1;
  return g;
}

void FixRangeToIncludeZero(int n_bits, double* a, double* b) {
  if (*a > 0) {
    *a = 0;
    return;
  }
  if (*b < 0) {
    *b = 0;
    return;
  }
  const double s = (*b - *a) / (std::ldexp(1.0, n_bits) - 1);
  if (!(s > 0)) return;
  const double a2 = s * std::nearbyint(*a / s);
  *b = *b - *a + a2;
  *a = a2;
}

QuantGrid UniformGrid(const std::vector<double>& range_min,
                      const std::vector<double>& range_max, int n_bits) {
  QuantGrid g;
  const double n = std::ldexp(1.0, n_bits) - 1;
  for (size_t c = 0; c < range_min.size() && c < range_max.size(); ++c) {
    double a = range_min[c], b = range_max[c];
    FixRangeToIncludeZero(n_bits, &a, &b);
    const double s = b > a ? (b - a) / n : 1e-8;
    g.scale.push_back(s);
    g.zero_point.push_back(-std::nearbyint(a / s));
  }
  g.qmin = 0;
  g.qmax = n;
  return g;
}

double SnapToPowerOfTwo(double t, double min_threshold) {
  return std::exp2(std::ceil(std::log2(std::max(t, min_threshold))));
}

}  // namespace quantd::train
