#include "core/quantizers/internal/numpy_compat.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace quantd::quantizers::internal {

void LinspaceInto(double start, double stop, int num, double* y) {
  if (num <= 0) return;
  const int div = num - 1;
  const double delta = stop - start;
  if (div > 0) {
    const double step = delta / div;
    if (step == 0) {
      for (int i = 0; i < num; ++i)
        y[i] = (static_cast<double>(i) / div) * delta + start;
    } else {
      for (int i = 0; i < num; ++i)
        y[i] = static_cast<double>(i) * step + start;
    }
    y[num - 1] = stop;
  } else {
    y[0] = start;
  }
}

std::vector<double> Linspace(double start, double stop, int num) {
  std::vector<double> y(std::max(num, 0));
  LinspaceInto(start, stop, num, y.data());
  return y;
}

void HistogramF32(const float* x, int64_t n, int n_bins,
                  std::vector<double>* edges, std::vector<double>* counts) {
  float mn = x[0], mx = x[0];
  for (int64_t i = 1; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  // _get_outer_edges: np.float32 -/+ 0.5 is float64 in NumPy 1.24.
  double first = mn, last = mx;
  if (first == last) {
    first -= 0.5;
    last += 0.5;
  }
  // linspace in float64, cast to float32.
  std::vector<double> lin = Linspace(first, last, n_bins + 1);
  std::vector<float> e32(n_bins + 1);
  for (int i = 0; i <= n_bins; ++i) e32[i] = static_cast<float>(lin[i]);
  edges->assign(e32.begin(), e32.end());
  counts->assign(n_bins, 0.0);
  // _histogram's fast path: an index estimate (x - first) * norm, then +-1
  // corrections against the float32 edges. norm is a float64 scalar: value-
  // based casting keeps the product float32 when |norm| < 3.4e38
  // (min_scalar_type), else (ranges under ~6e-36) it is float64.
  const float first32 = static_cast<float>(first);
  const float last32 = static_cast<float>(last);
  const double norm64 = n_bins / static_cast<double>(last32 - first32);
  const bool f32 = norm64 > -3.4e38 && norm64 < 3.4e38;
  const float norm = static_cast<float>(norm64);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!(v >= first32 && v <= last32)) continue;
    double pos = f32 ? static_cast<double>((v - first32) * norm)
                     : static_cast<double>(v - first32) * norm64;
    // A range wider than float32 (or an infinite value) makes the estimate
    // NaN or out of range, where NumPy fails; clamp so the index stays a
    // bin (exact for every other input: the same truncation).
    if (!(pos >= 0)) pos = 0;
    if (pos > n_bins) pos = n_bins;
    int64_t idx = static_cast<int64_t>(pos);
    if (idx == n_bins) --idx;
    if (v < e32[idx]) --idx;
    if (v >= e32[idx + 1] && idx != n_bins - 1) ++idx;
    (*counts)[idx] += 1.0;
  }
}

namespace {

float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

}  // namespace

// target_clones: the "fma" clone turns std::fma into the instruction (a
// library call otherwise); both clones compute the same fused results.
__attribute__((target_clones("fma", "default"))) float NumpyLogF32(float x_in) {
  // Coefficients (NPY_COEFF_{P,Q}*_LOGf), ln 2 and sqrt(1/2) as float32 bits.
  static const float kP[6] = {FromBits(0x00000000), FromBits(0x3F800000),
                              FromBits(0x4007361C), FromBits(0x3FBD70A9),
                              FromBits(0x3EC30333), FromBits(0x3CD42BCD)};
  static const float kQ[6] = {FromBits(0x3F800000), FromBits(0x4027361C),
                              FromBits(0x401CFE0D), FromBits(0x3F7C8AE4),
                              FromBits(0x3E1E5BF3), FromBits(0x3BC083DF)};
  const float kLn2 = FromBits(0x3F317218);
  const float kSqrtHalf = FromBits(0x3F3504F3);
  const float kFltMin = FromBits(0x00800000);
  const float kTwo100 = FromBits(0x71800000);
  if (std::isnan(x_in)) return std::numeric_limits<float>::quiet_NaN();
  if (x_in < 0) return -std::numeric_limits<float>::quiet_NaN();
  if (x_in == 0) return -std::numeric_limits<float>::infinity();
  if (std::isinf(x_in)) return x_in;
  // Denormals are pre-scaled by 2^100.
  const bool denormal = x_in < kFltMin;
  const float xs = denormal ? x_in * kTwo100 : x_in;
  const uint32_t bits = std::bit_cast<uint32_t>(xs);
  float exponent = static_cast<float>(static_cast<int32_t>(bits >> 23) - 0x7E);
  if (denormal) exponent -= 100.0f;
  float x = FromBits((bits & 0x7FFFFF) | (126u << 23));  // [0.5, 1)
  if (x <= kSqrtHalf) {
    x = x + x;
    exponent = exponent - 1.0f;
  }
  x -= 1.0f;
  float num = std::fma(kP[5], x, kP[4]);
  num = std::fma(num, x, kP[3]);
  num = std::fma(num, x, kP[2]);
  num = std::fma(num, x, kP[1]);
  num = std::fma(num, x, kP[0]);
  float den = std::fma(kQ[5], x, kQ[4]);
  den = std::fma(den, x, kQ[3]);
  den = std::fma(den, x, kQ[2]);
  den = std::fma(den, x, kQ[1]);
  den = std::fma(den, x, kQ[0]);
  return std::fma(exponent, kLn2, num / den);
}

std::vector<double> Interp(const std::vector<double>& x,
                           const std::vector<double>& xp,
                           const std::vector<double>& fp) {
  const int64_t lenxp = static_cast<int64_t>(xp.size());
  std::vector<double> res(x.size());
  const double lval = fp.front(), rval = fp.back();
  std::vector<double> slopes;
  const bool precompute = lenxp <= static_cast<int64_t>(x.size());
  if (precompute) {
    slopes.resize(lenxp > 1 ? lenxp - 1 : 0);
    for (int64_t i = 0; i + 1 < lenxp; ++i) {
      slopes[i] = (fp[i + 1] - fp[i]) / (xp[i + 1] - xp[i]);
    }
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (std::isnan(v)) {
      res[i] = v;
      continue;
    }
    int64_t j;
    if (v < xp[0]) {
      j = -1;
    } else if (v > xp[lenxp - 1]) {
      j = lenxp;
    } else {
      // Largest j with xp[j] <= v.
      j = std::upper_bound(xp.begin(), xp.end(), v) - xp.begin() - 1;
    }
    if (j == -1) {
      res[i] = lval;
    } else if (j == lenxp) {
      res[i] = rval;
    } else if (j == lenxp - 1) {
      res[i] = fp[j];
    } else if (xp[j] == v) {
      res[i] = fp[j];
    } else {
      const double slope =
          precompute ? slopes[j] : (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
      res[i] = slope * (v - xp[j]) + fp[j];
      if (std::isnan(res[i])) {
        res[i] = slope * (v - xp[j + 1]) + fp[j + 1];
        if (std::isnan(res[i]) && fp[j] == fp[j + 1]) res[i] = fp[j];
      }
    }
  }
  return res;
}

}  // namespace quantd::quantizers::internal
