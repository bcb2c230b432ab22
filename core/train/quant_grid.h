// The integer grid a trainable quantizer works on, in the affine form every
// quantd method reduces to: value = scale * (q - zero_point) with integer q in
// [qmin, qmax], one (scale, zero_point) per channel along `axis` (or one for
// the whole tensor). POWER_OF_TWO / SYMMETRIC: scale = T / 2^(n - signed),
// zero_point 0; UNIFORM: scale = (max - min) / (2^n - 1), q in [0, 2^n - 1].
#ifndef QUANTD_CORE_TRAIN_QUANT_GRID_H_
#define QUANTD_CORE_TRAIN_QUANT_GRID_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace quantd::train {

struct QuantGrid {
  std::vector<double> scale;       // per channel (size 1 when per tensor)
  std::vector<double> zero_point;  // same size as scale
  double qmin = 0, qmax = 0;
  // Channel layout of the tensor: element i is in channel (i / inner) %
  // channels. channels == 1 for per-tensor grids.
  int64_t channels = 1, inner = 1;

  int64_t ChannelOf(int64_t i) const {
    return channels == 1 ? 0 : (i / inner) % channels;
  }
};

// Channel layout of a tensor of `shape` split along `axis` (-1 = per tensor).
absl::Status SetChannelLayout(const std::vector<int64_t>& shape, int axis,
                              QuantGrid* grid);

// Symmetric / power-of-two grid for thresholds T (per channel).
QuantGrid SymmetricGrid(const std::vector<double>& thresholds, int n_bits,
                        bool is_signed);

// Uniform grid for [min, max] per channel, after MCT's
// fix_range_to_include_zero.
QuantGrid UniformGrid(const std::vector<double>& range_min,
                      const std::vector<double>& range_max, int n_bits);

// MCT's fix_range_to_include_zero(a, b, n) in place.
void FixRangeToIncludeZero(int n_bits, double* a, double* b);

// max_power_of_two: 2^ceil(log2(max(t, min_threshold))).
double SnapToPowerOfTwo(double t, double min_threshold);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_QUANT_GRID_H_
