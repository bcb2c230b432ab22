#include "core/qdq/qdq_math.h"

#include <immintrin.h>

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

namespace {

void FakeQuantizeScalar(float* v, int64_t n, float scale, int64_t zero_point,
                        const QdqStorage& storage) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) continue;  // QuantizeLinear of NaN is undefined
    v[i] = DequantizeValue(
        QuantizeValue(v[i], scale, zero_point, storage.qmin, storage.qmax),
        scale, zero_point);
  }
}

// QuantizeValue then DequantizeValue, eight floats at a time, with the same
// IEEE operations: r = round_half_even(x / scale); clamped to
// [qmin - zp, qmax - zp] (a NaN r, from x / 0, to the low end: vmaxps
// returns its second operand when unordered); + 0.0 turns the -0.0 of a
// small negative x into the +0.0 that float(int64(r)) gives; times scale.
// NaN inputs are kept. Exact while the clamp bounds are integers below
// 2^24 (every grid of 16 bits or fewer). Returns how many values it did.
__attribute__((target("avx2"))) int64_t FakeQuantizeAvx2(float* v, int64_t n,
                                                         float scale, float lo,
                                                         float hi) {
  const __m256 s = _mm256_set1_ps(scale), vlo = _mm256_set1_ps(lo),
               vhi = _mm256_set1_ps(hi), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(v + i);
    __m256 r = _mm256_round_ps(_mm256_div_ps(x, s),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(r, vlo), vhi), zero);
    const __m256 out = _mm256_mul_ps(r, s);
    _mm256_storeu_ps(
        v + i, _mm256_blendv_ps(out, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
  }
  _mm256_zeroupper();
  return i;
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

}  // namespace

void FakeQuantizeInPlace(absl::Span<float> values, float scale,
                         int64_t zero_point, const QdqStorage& storage) {
  float* v = values.data();
  const int64_t n = static_cast<int64_t>(values.size());
  const int64_t lo = storage.qmin - zero_point, hi = storage.qmax - zero_point;
  constexpr int64_t kExact = int64_t{1} << 24;
  int64_t done = 0;
  if (kHaveAvx2 && lo > -kExact && lo < kExact && hi > -kExact && hi < kExact &&
      lo <= hi) {
    done = FakeQuantizeAvx2(v, n, scale, static_cast<float>(lo),
                            static_cast<float>(hi));
  }
  FakeQuantizeScalar(v + done, n - done, scale, zero_point, storage);
}

void FakeQuantizeInPlaceScalar(absl::Span<float> values, float scale,
                               int64_t zero_point, const QdqStorage& storage) {
  FakeQuantizeScalar(values.data(), static_cast<int64_t>(values.size()), scale,
                     zero_point, storage);
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
