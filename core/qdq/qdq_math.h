// The arithmetic of ONNX QuantizeLinear/DequantizeLinear, shared by the QDQ
// exporter and quantd's fake-quant execution so both compute identical values:
//   q = saturate(round_half_even(x / scale) + zero_point)   (float32 divide)
//   x' = (q - zero_point) * scale                            (float32 multiply)
#ifndef QUANTD_CORE_QDQ_QDQ_MATH_H_
#define QUANTD_CORE_QDQ_QDQ_MATH_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/tensor.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

// Elements [0, n) of a weight quantized per channel, in the runs that share
// a channel: f(channel, begin, end) -> absl::Status for each run of `inner`
// elements, cycling through `channels` (the layout [outer, channels,
// inner]), or once for all of them with channel 0 when there is one
// channel. Stops at the first error. Dequantizing run by run leaves no
// division per element.
template <typename F>
absl::Status ForEachChannelRun(int64_t n, int64_t channels, int64_t inner,
                               F&& f) {
  if (channels <= 1) {
    return n > 0 ? f(int64_t{0}, int64_t{0}, n) : absl::OkStatus();
  }
  if (inner <= 0) return absl::OkStatus();  // then n == 0
  for (int64_t begin = 0, k = 0; begin < n; begin += inner, ++k) {
    absl::Status s = f(k % channels, begin, std::min(n, begin + inner));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// The storage for an n-bit integer grid: 2..4 bits -> int4/uint4, 5..8 ->
// int8/uint8, 9..16 -> int16/uint16, with qmin/qmax of the n-bit grid.
absl::StatusOr<QdqStorage> StorageForBits(int n_bits, bool is_signed);
// The full range of the storage dtype (what QuantizeLinear saturates to).
int64_t DTypeMin(DType dtype);
int64_t DTypeMax(DType dtype);
// True when the grid is narrower than the dtype (QuantizeLinear alone would
// not clamp to it; the exporter adds a Clip in front of the Q).
bool NeedsClip(const QdqStorage& storage);
// Opset that has Q/DQ for this dtype: 13 for 8-bit and int32, 21 otherwise.
int64_t MinOpsetFor(DType dtype);

inline int64_t QuantizeValue(float x, float scale, int64_t zero_point,
                             int64_t qmin, int64_t qmax);
inline float DequantizeValue(int64_t q, float scale, int64_t zero_point);

// x -> dequantize(quantize(x)) in place, per tensor. AVX2 where the CPU has
// it (checked at run time), bit-identical to the portable body, which tests
// call as FakeQuantizeInPlaceScalar.
void FakeQuantizeInPlace(absl::Span<float> values, float scale,
                         int64_t zero_point, const QdqStorage& storage);
void FakeQuantizeInPlaceScalar(absl::Span<float> values, float scale,
                               int64_t zero_point, const QdqStorage& storage);

// int32 bias for a linear op: scale[c] = x_scale * w_scale[c] (float32, as
// ONNX Runtime computes it), q = round_half_even(b / scale[c]) saturated to
// int32. `w_scales` has one entry (per-tensor) or one per output channel.
struct QuantizedBias {
  std::vector<float> scales;
  std::vector<int32_t> values;
};
QuantizedBias QuantizeBias(absl::Span<const float> bias, float x_scale,
                           absl::Span<const float> w_scales);

// --- inline definitions ---
inline int64_t QuantizeValue(float x, float scale, int64_t zero_point,
                             int64_t qmin, int64_t qmax) {
  float r = __builtin_nearbyintf(x / scale);
  // Compare in float first so huge values (and +-inf) cannot overflow int64.
  if (!(r >= static_cast<float>(qmin - zero_point))) return qmin;
  if (r > static_cast<float>(qmax - zero_point)) return qmax;
  int64_t q = static_cast<int64_t>(r) + zero_point;
  return q < qmin ? qmin : (q > qmax ? qmax : q);
}

inline float DequantizeValue(int64_t q, float scale, int64_t zero_point) {
  return static_cast<float>(q - zero_point) * scale;
}

}  // namespace quantd

#endif  // QUANTD_CORE_QDQ_QDQ_MATH_H_
