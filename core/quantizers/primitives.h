// MCT's quantizer primitives (quantizers_helpers.py), with NumPy's dtype
// semantics: a float32 tensor quantized with a scalar parameter is computed
// in float32; float64 inputs in float64. Rounding is half to even.
//
//   // T=2, 8 bit signed -> delta=1/64, grid [-2, 2-1/64]
//   std::vector<float> q = QuantizeTensor(x, 2.0, 8, /*is_signed=*/true);
#ifndef QUANTD_CORE_QUANTIZERS_PRIMITIVES_H_
#define QUANTD_CORE_QUANTIZERS_PRIMITIVES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

// 2^ceil(log2(max(x, min_threshold))), in float64 / float32.
double MaxPowerOfTwo(double x, double min_threshold = kMinThreshold);
float MaxPowerOfTwoF32(float x, double min_threshold = kMinThreshold);

// threshold / 2^(n_bits - signed).
double CalculateDelta(double threshold, int n_bits, bool is_signed);

// Moves [range_min, range_max] so that 0 is on the grid of 2^n_bits levels
// (min > 0 -> min = 0; max < 0 -> max = 0; else shift to a grid multiple).
std::pair<double, double> FixRangeToIncludeZero(double range_min,
                                                double range_max, int n_bits);

// Symmetric / power-of-two quantization of float32 data with a scalar
// threshold (float32 arithmetic, as NumPy does).
std::vector<float> QuantizeTensor(absl::Span<const float> x, double threshold,
                                  int n_bits, bool is_signed);
// Uniform quantization of float32 data with a scalar range.
std::vector<float> UniformQuantizeTensor(absl::Span<const float> x,
                                         double range_min, double range_max,
                                         int n_bits);
// The same on float64 data (histogram edges), in float64.
std::vector<double> QuantizeTensorF64(absl::Span<const double> x,
                                      double threshold, int n_bits,
                                      bool is_signed);
std::vector<double> UniformQuantizeTensorF64(absl::Span<const double> x,
                                             double range_min, double range_max,
                                             int n_bits);

// A tensor transposed to [C, K] with `axis` first (reshape_tensor_for_per_
// channel_search). Fails on a bad axis.
struct PerChannelMatrix {
  int64_t channels = 0;
  int64_t cols = 0;
  std::vector<float> data;  // channels * cols, row-major
};
absl::StatusOr<PerChannelMatrix> ReshapeForPerChannel(const TensorView& tensor,
                                                      int axis);

// get_tensor_max: max(-min(x), max(x) * f) with the no-clipping expansion
// f = 2^(n-1)/(2^(n-1)-1) (0 for n=1, 1 for uniform). Per tensor in float64
// (one value), per channel in float32 (C values).
absl::StatusOr<std::vector<double>> GetTensorMax(const TensorView& tensor,
                                                 bool per_channel, int axis,
                                                 int n_bits,
                                                 bool is_uniform = false);
// get_tensor_min: min(x) per tensor or per channel.
absl::StatusOr<std::vector<double>> GetTensorMin(const TensorView& tensor,
                                                 bool per_channel, int axis);

// clip(x / (T + eps) * 2^(n - signed), int range) with one threshold per
// channel along `axis` (or one for all when thresholds has size 1):
// thresholds_f32 selects float32 arithmetic for the threshold (a float32
// per-channel array) instead of a float64 scalar.
absl::StatusOr<std::vector<float>> IntQuantizationWithThreshold(
    const TensorView& tensor, absl::Span<const double> thresholds, int axis,
    int n_bits, bool is_signed, bool thresholds_f32, double eps = kEps);
// The float64 flavour used on histogram edges with a scalar threshold.
std::vector<double> IntQuantizationWithThresholdF64(absl::Span<const double> x,
                                                    double threshold,
                                                    int n_bits, bool is_signed,
                                                    double eps = kEps);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_PRIMITIVES_H_
