// Applying chosen parameters: fake-quant float values plus the integer
// values an integer runtime stores (MCT's power_of_two_quantizer,
// symmetric_quantizer, uniform_quantizer and lut_kmeans_quantizer).
//
// Per-tensor parameters (one value) quantize in float32 like NumPy does with
// a scalar; per-channel parameters (one per channel along `axis`) in float64.
//   symmetric/PoT: ints in [-2^(n-1), 2^(n-1)-1] (signed) or [0, 2^n-1],
//                  value = scale * int, scale = T / 2^(n - signed), zp = 0;
//   uniform:       ints in [0, 2^n-1], value = scale * (int - zero_point)
//                  with the range first moved to include 0;
//   LUT:           ints are indices into the LUT, value = lut[i]/2^7 * T.
#ifndef QUANTD_CORE_QUANTIZERS_QUANTIZER_H_
#define QUANTD_CORE_QUANTIZERS_QUANTIZER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

struct QuantizedTensor {
  std::vector<float> values;         // fake-quant, same layout as the input
  std::vector<int32_t> ints;         // integer codes, same layout
  std::vector<double> scales;        // per channel (or 1)
  std::vector<int32_t> zero_points;  // per channel (or 1)
};

absl::StatusOr<QuantizedTensor> QuantizeSymmetric(
    const TensorView& tensor, absl::Span<const double> thresholds, int axis,
    int n_bits, bool is_signed);

absl::StatusOr<QuantizedTensor> QuantizeUniform(
    const TensorView& tensor, absl::Span<const double> range_min,
    absl::Span<const double> range_max, int axis, int n_bits);

// lut_values are integers on the 8-bit grid; scales one per channel (or 1).
// Ties between two centers go to the first in `lut_values` order.
absl::StatusOr<QuantizedTensor> QuantizeLut(const TensorView& tensor,
                                            absl::Span<const double> lut_values,
                                            absl::Span<const double> scales,
                                            int axis, bool is_signed = true);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_QUANTIZER_H_
