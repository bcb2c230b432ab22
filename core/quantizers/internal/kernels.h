// Quantization kernels templated on NumPy's dtype semantics.
//
// P is the type the parameters were computed in (np.float64 scalars, or
// float32 arrays), D the type of the data arithmetic. MCT calls these with
// (P=double, D=float) for a float32 tensor and a scalar threshold (NumPy
// casts the scalar to float32 at each operation), (float, float) for float32
// per-channel arrays, and (double, double) for float64 arrays.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_KERNELS_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_KERNELS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/quantizers/internal/numpy_compat.h"

namespace quantd::quantizers::internal {

// fix_range_to_include_zero, evaluated literally (IEEE NaN/inf included).
template <typename P>
void FixRange(P a, P b, int n_bits, P* out_a, P* out_b) {
  const bool min_positive = a > 0;
  const bool max_negative = b < 0;
  const P scale = (b - a) / static_cast<P>((int64_t{1} << n_bits) - 1);
  P min_adj = scale * RoundHalfEven(a / scale);
  P max_adj = b - a + min_adj;
  const bool mid = !min_positive && !max_negative;
  min_adj = min_adj * static_cast<P>(mid) + static_cast<P>(max_negative) * a;
  max_adj = max_adj * static_cast<P>(mid) + static_cast<P>(min_positive) * b;
  *out_a = min_adj;
  *out_b = max_adj;
}

// The grid of uniform_quantize_tensor after the zero fix: lo, hi and step,
// each rounded to D as NumPy does when it mixes them with D data.
template <typename D>
struct Grid {
  D lo, hi, delta;
};

template <typename P, typename D>
Grid<D> UniformGrid(P a, P b, int n_bits) {
  P fa, fb;
  FixRange(a, b, n_bits, &fa, &fb);
  const P delta = (fb - fa) / static_cast<P>((int64_t{1} << n_bits) - 1);
  return {static_cast<D>(fa), static_cast<D>(fb), static_cast<D>(delta)};
}

// quantize_tensor's range: [-T*signed, T - T/2^(n-signed)].
template <typename P>
void SymmetricRange(P threshold, int n_bits, bool is_signed, P* a, P* b) {
  const P delta =
      threshold / static_cast<P>(int64_t{1} << (n_bits - (is_signed ? 1 : 0)));
  *a = -threshold * static_cast<P>(is_signed ? 1 : 0);
  *b = threshold - delta;
}

template <typename P, typename D>
Grid<D> SymmetricGrid(P threshold, int n_bits, bool is_signed) {
  P a, b;
  SymmetricRange(threshold, n_bits, is_signed, &a, &b);
  return UniformGrid<P, D>(a, b, n_bits);
}

template <typename D>
inline D QuantizeOne(D x, const Grid<D>& g) {
  // np.clip(x, a, b) == minimum(maximum(x, a), b), NaN-propagating.
  D c = x;
  if (c < g.lo) c = g.lo;
  if (c > g.hi) c = g.hi;
  return g.delta * RoundHalfEven((c - g.lo) / g.delta) + g.lo;
}

template <typename D>
void QuantizeRow(const D* x, int64_t n, const Grid<D>& g, D* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = QuantizeOne(x[i], g);
}

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_KERNELS_H_
