#include "core/qdq/qdq_math.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace quantd {

absl::StatusOr<QdqStorage> StorageForBits(int n_bits, bool is_signed) {
  if (n_bits < 2 || n_bits > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat(n_bits, "-bit integers cannot be stored in QDQ ONNX ",
                     "(2..16 bits are supported)"));
  }
  QdqStorage s;
  if (n_bits <= 4) {
    s.dtype = is_signed ? DType::kInt4 : DType::kUint4;
  } else if (n_bits <= 8) {
    s.dtype = is_signed ? DType::kInt8 : DType::kUint8;
  } else {
    s.dtype = is_signed ? DType::kInt16 : DType::kUint16;
  }
  if (is_signed) {
    s.qmin = -(int64_t{1} << (n_bits - 1));
    s.qmax = (int64_t{1} << (n_bits - 1)) - 1;
  } else {
    s.qmin = 0;
    s.qmax = (int64_t{1} << n_bits) - 1;
  }
  return s;
}

int64_t DTypeMin(DType dtype) {
  switch (dtype) {
    case DType::kInt4:
      return -8;
    case DType::kInt8:
      return -128;
    case DType::kInt16:
      return -32768;
    case DType::kInt32:
      return std::numeric_limits<int32_t>::min();
    default:
      return 0;
  }
}

int64_t DTypeMax(DType dtype) {
  switch (dtype) {
    case DType::kInt4:
      return 7;
    case DType::kUint4:
      return 15;
    case DType::kInt8:
      return 127;
    case DType::kUint8:
      return 255;
    case DType::kInt16:
      return 32767;
    case DType::kUint16:
      return 65535;
    case DType::kInt32:
      return std::numeric_limits<int32_t>::max();
    default:
      return 0;
  }
}

bool NeedsClip(const QdqStorage& storage) {
  return storage.qmin != DTypeMin(storage.dtype) ||
         storage.qmax != DTypeMax(storage.dtype);
}

int64_t MinOpsetFor(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUint8:
    case DType::kInt32:
      return 13;
    default:
      return 21;
  }
}

void FakeQuantizeInPlace(absl::Span<float> values, float scale,
                         int64_t zero_point, const QdqStorage& storage) {
  for (float& v : values) {
    if (std::isnan(v)) continue;  // QuantizeLinear of NaN is undefined
    v = DequantizeValue(
        QuantizeValue(v, scale, zero_point, storage.qmin, storage.qmax), scale,
        zero_point);
  }
}

QuantizedBias QuantizeBias(absl::Span<const float> bias, float x_scale,
                           absl::Span<const float> w_scales) {
  QuantizedBias out;
  out.scales.resize(bias.size());
  out.values.resize(bias.size());
  for (size_t c = 0; c < bias.size(); ++c) {
    float w = w_scales.size() == 1 ? w_scales[0] : w_scales[c];
    float s = x_scale * w;
    out.scales[c] = s;
    if (!(s > 0) || !std::isfinite(s)) {
      out.values[c] = 0;
      continue;
    }
    out.values[c] = static_cast<int32_t>(
        QuantizeValue(bias[c], s, 0, std::numeric_limits<int32_t>::min(),
                      std::numeric_limits<int32_t>::max()));
  }
  return out;
}

}  // namespace quantd
