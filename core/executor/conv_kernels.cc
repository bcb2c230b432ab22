#include "core/executor/conv_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "core/executor/gemm.h"
#include "core/executor/kernel.h"
#include "core/executor/packed_gemm.h"
#include "core/util/checked_region.h"

namespace quantd::exec {
namespace {

// Columns per im2col tile: about 256 KiB of col buffer, but at least 256
// columns while that fits in 1 MiB (this core's L2), a multiple of 16. Eigen
// repacks the weights for every tile, so narrow tiles of deep layers
// (3x3 over 96 channels: 864 rows) cost ~5 % of ppocr_det.
int64_t TileWidth(int64_t rows, int64_t out_size) {
  rows = std::max<int64_t>(rows, 1);
  int64_t t = std::max((int64_t{1} << 16) / rows,
                       std::min<int64_t>(256, (int64_t{1} << 18) / rows));
  t = std::max<int64_t>(64, t / 16 * 16);
  return std::min(t, out_size);
}

// Items per chunk so that a chunk holds at least ~0.5 MFLOP (~10 us): the
// hand-off to a spinning worker costs about a microsecond, but each item also
// repacks its GEMM operands, and on a busy machine a helper that is not
// running delays the whole op. Every item writes its own outputs with the
// same arithmetic wherever it runs, so the grain never changes results.
constexpr int64_t kMinChunkFlops = int64_t{1} << 19;

int64_t GrainFor(int64_t flops_per_item) {
  return std::max<int64_t>(1, (kMinChunkFlops + flops_per_item - 1) /
                                  std::max<int64_t>(flops_per_item, 1));
}

bool IsPointwise(const WindowGeometry& g) {
  for (int i = 0; i < g.rank(); ++i) {
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.pad_begin[i] != 0 ||
        g.pad_end[i] != 0) {
      return false;
    }
  }
  return true;
}

// 2-D (and 1-D as H = 1) im2col, walking output rows.
void Im2Col2D(const Im2ColSource& src, int64_t width, float* col) {
  const float* x = src.x;
  const int64_t channels = src.channels, H = src.H, W = src.W, KH = src.KH,
                KW = src.KW, SH = src.SH, SW = src.SW, DH = src.DH, DW = src.DW,
                PH = src.PH, PW = src.PW, OW = src.OW, p0 = src.p0;
  float* dst = col;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * H * W;
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t kw = 0; kw < KW; ++kw) {
        int64_t p = p0;
        int64_t oh = p0 / OW;
        int64_t ow = p0 % OW;
        float* d = dst;
        const int64_t end = p0 + width;
        const int64_t off_w = kw * DW - PW;
        while (p < end) {
          const int64_t n = std::min(OW - ow, end - p);
          const int64_t ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= H) {
            std::memset(d, 0, n * sizeof(float));
          } else {
            const float* xr = xc + ih * W;
            if (SW == 1) {
              // iw = ow + j + off_w valid for j in [lo, hi).
              const int64_t base = ow + off_w;
              const int64_t lo = std::clamp<int64_t>(-base, 0, n);
              const int64_t hi = std::clamp<int64_t>(W - base, lo, n);
              for (int64_t j = 0; j < lo; ++j) d[j] = 0;
              if (hi > lo) {
                std::memcpy(d + lo, xr + base + lo, (hi - lo) * sizeof(float));
              }
              for (int64_t j = hi; j < n; ++j) d[j] = 0;
            } else {
              for (int64_t j = 0; j < n; ++j) {
                const int64_t iw = (ow + j) * SW + off_w;
                d[j] = (iw >= 0 && iw < W) ? xr[iw] : 0.0f;
              }
            }
          }
          d += n;
          p += n;
          ow = 0;
          ++oh;
        }
        dst += width;
      }
    }
  }
}

// Any rank, one element at a time (1-D/3-D convolutions are rare).
void Im2ColGeneric(const ConvShape& s, const float* x, int64_t channels,
                   int64_t p0, int64_t width, float* col) {
  const WindowGeometry& g = s.geo;
  const int r = g.rank();
  std::vector<int64_t> k(r), o(r);
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kk = 0; kk < s.kernel_size; ++kk, ++row) {
      int64_t rem = kk;
      for (int d = r - 1; d >= 0; --d) {
        k[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      float* dst = col + row * width;
      for (int64_t j = 0; j < width; ++j) {
        int64_t p = p0 + j;
        for (int d = r - 1; d >= 0; --d) {
          o[d] = p % g.out[d];
          p /= g.out[d];
        }
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < r && inside; ++d) {
          const int64_t i =
              o[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
          inside = i >= 0 && i < g.in[d];
          off = off * g.in[d] + i;
        }
        dst[j] = inside ? x[c * s.in_size + off] : 0.0f;
      }
    }
  }
}

// yr[ow] += sum_k w[k] * xr[ow * SW - PW + k * DW] over the taps inside
// [0, W), for a compile-time kernel width: interior columns (every tap
// inside) accumulate all taps in registers and vectorise over ow; the few
// edge columns check each tap. Per element, taps are added in k order, as in
// the generic loop, so the result does not depend on which path ran. Under
// ASan the interior's regions are checked once (as in DepthwiseFullRow).
template <int KW>
QUANTD_UNCHECKED_ACCESSES void DepthwiseRow(const float* xr, const float* w,
                                            int64_t W, int64_t OW, int64_t SW,
                                            int64_t DW, int64_t PW, float* yr) {
  int64_t lo = (PW + SW - 1) / SW;
  const int64_t last = W - 1 + PW - (KW - 1) * DW;
  int64_t hi = last < 0 ? 0 : last / SW + 1;
  lo = std::min(lo, OW);
  hi = std::clamp(hi, lo, OW);
  const int64_t span = (hi - 1) * SW + (KW - 1) * DW + 1 - lo * SW;
  if (hi > lo && (lo * SW - PW < 0 || lo * SW - PW + span > W)) std::abort();
  CheckRegion(w, KW * sizeof(float));
  if (hi > lo) {
    CheckRegion(xr + lo * SW - PW, span * sizeof(float));
    CheckRegion(yr + lo, (hi - lo) * sizeof(float));
  }
  auto edge = [&](int64_t ow) {
    float acc = yr[ow];
    for (int k = 0; k < KW; ++k) {
      const int64_t iw = ow * SW - PW + k * DW;
      if (iw >= 0 && iw < W) acc += w[k] * xr[iw];
    }
    yr[ow] = acc;
  };
  for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
  float wk[KW];
  for (int k = 0; k < KW; ++k) wk[k] = w[k];
  const float* xs = xr - PW;
  if (SW == 1 && DW == 1) {
    for (int64_t ow = lo; ow < hi; ++ow) {
      float acc = yr[ow];
      for (int k = 0; k < KW; ++k) acc += wk[k] * xs[ow + k];
      yr[ow] = acc;
    }
  } else if (SW == 2 && DW == 1) {
    for (int64_t ow = lo; ow < hi; ++ow) {
      float acc = yr[ow];
      for (int k = 0; k < KW; ++k) acc += wk[k] * xs[2 * ow + k];
      yr[ow] = acc;
    }
  } else {
    for (int64_t ow = lo; ow < hi; ++ow) {
      float acc = yr[ow];
      for (int k = 0; k < KW; ++k) acc += wk[k] * xs[ow * SW + k * DW];
      yr[ow] = acc;
    }
  }
  for (int64_t ow = hi; ow < OW; ++ow) edge(ow);
}

// One output row whose K input rows (stride S, no dilation) all lie inside
// the image: every element's K*K taps accumulate in a register, and the row
// is written once. Per element the taps are added in (kh, kw) order from the
// bias, skipping the columns outside [0, W), as the row-at-a-time loop below
// adds them, so the result does not depend on which path ran.
// Under ASan its accesses are checked per region, not one by one
// (core/util/checked_region.h): the window [lo, hi) keeps every interior
// read inside its row, and CheckRegion covers exactly what the loops read
// and write; `edge` is instrumented as usual.
template <int K, int S>
QUANTD_UNCHECKED_ACCESSES void DepthwiseFullRow(const float* x, int64_t W,
                                                const float* w, int64_t OW,
                                                int64_t PW, float bias,
                                                float* yr) {
  int64_t lo = (PW + S - 1) / S;
  const int64_t last = W - 1 + PW - (K - 1);
  int64_t hi = last < 0 ? 0 : last / S + 1;
  lo = std::min(lo, OW);
  hi = std::clamp(hi, lo, OW);
  if (hi > lo && (S * lo - PW < 0 || S * (hi - 1) - PW + K > W)) std::abort();
  CheckRegion(w, K * K * sizeof(float));
  if (hi > lo) {
    for (int kh = 0; kh < K; ++kh) {
      CheckRegion(x + kh * W + S * lo - PW,
                  (S * (hi - 1) + K - S * lo) * sizeof(float));
    }
    CheckRegion(yr + lo, (hi - lo) * sizeof(float));
  }
  float wk[K * K];
  for (int k = 0; k < K * K; ++k) wk[k] = w[k];
  auto edge = [&](int64_t ow) {
    float acc = bias;
    for (int kh = 0; kh < K; ++kh) {
      for (int k = 0; k < K; ++k) {
        const int64_t iw = ow * S - PW + k;
        if (iw >= 0 && iw < W) acc += wk[kh * K + k] * x[kh * W + iw];
      }
    }
    yr[ow] = acc;
  };
  for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
  const float* xs = x - PW;
  for (int64_t ow = lo; ow < hi; ++ow) {
    float acc = bias;
    for (int kh = 0; kh < K; ++kh) {
      for (int k = 0; k < K; ++k) {
        acc += wk[kh * K + k] * xs[kh * W + S * ow + k];
      }
    }
    yr[ow] = acc;
  }
  for (int64_t ow = hi; ow < OW; ++ow) edge(ow);
}

// Output rows [oh_a, oh_b) of a stride-1 K x K window whose output is as
// wide as its input (OW == W: "same" padding, PW = (K - 1) / 2 or less),
// reading window rows [kh_lo, kh_hi), which lie inside the image for every
// row (all K in the band between the vertical borders, fewer in a border
// row). Output (oh, ow) reads input (oh - PH + kh, ow - PW + kw), which in
// flat indices is p + (kh - PH) * W - PW + kw with p = oh * W + ow: the
// whole band is one stencil over the flat plane, a long loop instead of one
// short loop a row (7 and 14 wide rows left mostly to scalar tails). The
// columns whose window crosses the left or right border read a neighbouring
// row there; they are recomputed after, tap by tap, as DepthwiseFullRow's
// edges are. Per element the taps are added in (kh, kw) order from the
// bias, skipping those outside the image, as everywhere else. The window
// rows are template arguments: with a run-time range GCC vectorised the tap
// loop as an in-order reduction, unfused, where every other path fuses.
template <int K, int kh_lo, int kh_hi>
QUANTD_UNCHECKED_ACCESSES void DepthwiseFlatRows(const float* x, int64_t W,
                                                 const float* w, int64_t PH,
                                                 int64_t PW, float bias,
                                                 int64_t oh_a, int64_t oh_b,
                                                 float* y) {
  if (oh_b <= oh_a) return;
  // Interior columns of a row: [lo, hi), every tap inside.
  const int64_t lo = std::min<int64_t>(PW, W);
  const int64_t hi = std::clamp<int64_t>(W + PW - K + 1, lo, W);
  float wk[K * K];
  for (int k = 0; k < K * K; ++k) wk[k] = w[k];
  CheckRegion(w, K * K * sizeof(float));
  const int64_t p_a = oh_a * W + lo, p_b = (oh_b - 1) * W + hi;
  const float* xs = x - PH * W - PW;
  if (p_b > p_a) {
    // From column lo - PW of window row kh_lo of the first output to column
    // hi - 1 - PW + K - 1 of window row kh_hi - 1 of the last.
    CheckRegion(xs + p_a + kh_lo * W,
                (p_b - p_a + (kh_hi - 1 - kh_lo) * W + K - 1) * sizeof(float));
    CheckRegion(y + p_a, (p_b - p_a) * sizeof(float));
    for (int64_t p = p_a; p < p_b; ++p) {
      float acc = bias;
      for (int kh = kh_lo; kh < kh_hi; ++kh) {
        for (int k = 0; k < K; ++k) {
          acc += wk[kh * K + k] * xs[p + kh * W + k];
        }
      }
      y[p] = acc;
    }
  }
  auto edge = [&](int64_t oh, int64_t ow) {
    const float* xr = xs + oh * W + PW;  // input row oh - PH
    float acc = bias;
    for (int kh = kh_lo; kh < kh_hi; ++kh) {
      for (int k = 0; k < K; ++k) {
        const int64_t iw = ow - PW + k;
        if (iw >= 0 && iw < W) acc += wk[kh * K + k] * xr[kh * W + iw];
      }
    }
    y[oh * W + ow] = acc;
  };
  for (int64_t oh = oh_a; oh < oh_b; ++oh) {
    for (int64_t ow = 0; ow < lo; ++ow) edge(oh, ow);
    for (int64_t ow = hi; ow < W; ++ow) edge(oh, ow);
  }
}

using FlatRowsFn = void (*)(const float*, int64_t, const float*, int64_t,
                            int64_t, float, int64_t, int64_t, float*);

// The flat kernel for window rows [kh_lo, kh_hi) of a K x K window: all of
// them, or those of a border row under "same" padding; nullptr otherwise.
FlatRowsFn FlatRowsFor(int64_t K, int64_t kh_lo, int64_t kh_hi) {
  if (K == 3) {
    if (kh_lo == 0 && kh_hi == 3) return &DepthwiseFlatRows<3, 0, 3>;
    if (kh_lo == 1 && kh_hi == 3) return &DepthwiseFlatRows<3, 1, 3>;
    if (kh_lo == 0 && kh_hi == 2) return &DepthwiseFlatRows<3, 0, 2>;
  } else if (K == 5) {
    if (kh_lo == 0 && kh_hi == 5) return &DepthwiseFlatRows<5, 0, 5>;
    if (kh_lo == 2 && kh_hi == 5) return &DepthwiseFlatRows<5, 2, 5>;
    if (kh_lo == 1 && kh_hi == 5) return &DepthwiseFlatRows<5, 1, 5>;
    if (kh_lo == 0 && kh_hi == 4) return &DepthwiseFlatRows<5, 0, 4>;
    if (kh_lo == 0 && kh_hi == 3) return &DepthwiseFlatRows<5, 0, 3>;
  }
  return nullptr;
}

using FullRowFn = void (*)(const float*, int64_t, const float*, int64_t,
                           int64_t, float, float*);

// The full-row kernel for a square 3x3 or 5x5 window, strides 1 or 2, no
// dilation; nullptr otherwise.
FullRowFn FullRowKernel(const WindowGeometry& g) {
  const int64_t K = g.kernel[0];
  if (g.kernel[1] != K || g.dilation[0] != 1 || g.dilation[1] != 1) {
    return nullptr;
  }
  const int64_t S = g.stride[1];
  if (K == 3 && S == 1) return &DepthwiseFullRow<3, 1>;
  if (K == 3 && S == 2) return &DepthwiseFullRow<3, 2>;
  if (K == 5 && S == 1) return &DepthwiseFullRow<5, 1>;
  if (K == 5 && S == 2) return &DepthwiseFullRow<5, 2>;
  return nullptr;
}

// The flat band's kernel for a square 3x3 or 5x5 window, stride 1 both ways,
// no dilation, the output as wide as the input and the input at least a
// window wide (so every row has interior columns); nullptr otherwise.
FlatRowsFn FlatBandKernel(const WindowGeometry& g) {
  const int64_t K = g.kernel[0];
  const bool applies = g.kernel[1] == K && g.in[1] >= K && g.stride[0] == 1 &&
                       g.stride[1] == 1 && g.dilation[0] == 1 &&
                       g.dilation[1] == 1 && g.out[1] == g.in[1];
  return applies ? FlatRowsFor(K, 0, K) : nullptr;
}

// Direct depthwise 2-D convolution of one channel plane.
void DepthwisePlane(const ConvShape& s, const float* x, const float* w,
                    float bias, float* y) {
  const WindowGeometry& g = s.geo;
  const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  const int64_t KH = g.kernel[0], KW = g.kernel[1];
  const int64_t SH = g.stride[0], SW = g.stride[1];
  const int64_t DH = g.dilation[0], DW = g.dilation[1];
  const int64_t PH = g.pad_begin[0], PW = g.pad_begin[1];
  const FullRowFn full_row = FullRowKernel(g);
  // Rows whose whole window is inside the image vertically, [oh_a, oh_b),
  // as one flat band; border rows flat too where a template exists.
  int64_t oh_a = 0, oh_b = 0;
  if (const FlatRowsFn band = FlatBandKernel(g); band != nullptr) {
    oh_a = std::min(PH, OH);
    oh_b = std::clamp<int64_t>(H - KH + PH + 1, oh_a, OH);
    band(x, W, w, PH, PW, bias, oh_a, oh_b, y);
  }
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = y + oh * OW;
    const int64_t ih0 = oh * SH - PH;
    if (oh_b > oh_a) {
      if (oh >= oh_a && oh < oh_b) continue;
      const FlatRowsFn border = FlatRowsFor(KH, std::max<int64_t>(0, PH - oh),
                                            std::min<int64_t>(KH, H + PH - oh));
      if (border != nullptr) {
        border(x, W, w, PH, PW, bias, oh, oh + 1, y);
        continue;
      }
    }
    if (full_row != nullptr && ih0 >= 0 && ih0 + KH <= H) {
      full_row(x + ih0 * W, W, w, OW, PW, bias, yr);
      continue;
    }
    for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = bias;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      const float* xr = x + ih * W;
      const float* wr = w + kh * KW;
      if (KW == 3) {
        DepthwiseRow<3>(xr, wr, W, OW, SW, DW, PW, yr);
        continue;
      }
      if (KW == 5) {
        DepthwiseRow<5>(xr, wr, W, OW, SW, DW, PW, yr);
        continue;
      }
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float wv = wr[kw];
        const int64_t off = kw * DW - PW;
        // iw = ow * SW + off in [0, W).
        int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
        int64_t hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / SW + 1;
        lo = std::min(lo, OW);
        hi = std::min(hi, OW);
        if (SW == 1) {
          const float* xs = xr + off;
          for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xs[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * SW + off];
        }
      }
    }
  }
}

}  // namespace

std::optional<Im2ColSource> Im2ColSourceOf(const ConvShape& s, const float* x,
                                           int64_t channels, int64_t p0) {
  const WindowGeometry& g = s.geo;
  if (g.rank() == 2) {
    return Im2ColSource{x,
                        channels,
                        g.in[0],
                        g.in[1],
                        g.kernel[0],
                        g.kernel[1],
                        g.stride[0],
                        g.stride[1],
                        g.dilation[0],
                        g.dilation[1],
                        g.pad_begin[0],
                        g.pad_begin[1],
                        g.out[1],
                        p0};
  }
  if (g.rank() == 1) {  // as height 1
    return Im2ColSource{
        x,        channels,    1, g.in[0],       1, g.kernel[0],
        1,        g.stride[0], 1, g.dilation[0], 0, g.pad_begin[0],
        g.out[0], p0};
  }
  return std::nullopt;
}

void Im2Col(const ConvShape& s, const float* x, int64_t channels, int64_t p0,
            int64_t width, float* col) {
  if (std::optional<Im2ColSource> src = Im2ColSourceOf(s, x, channels, p0)) {
    Im2Col2D(*src, width, col);
  } else {
    Im2ColGeneric(s, x, channels, p0, width, col);
  }
}

void Col2Im(const ConvShape& s, const float* col, int64_t channels, float* x) {
  const WindowGeometry& g = s.geo;
  const int r = g.rank();
  if (r == 2 && g.pad_begin[0] == 0 && g.pad_begin[1] == 0) {
    // Every tap lands inside the un-padded image: a strided scatter-add.
    const int64_t KH = g.kernel[0], KW = g.kernel[1];
    const int64_t OH = g.out[0], OW = g.out[1], W = g.in[1];
    const float* src = col;
    for (int64_t c = 0; c < channels; ++c) {
      float* xc = x + c * s.in_size;
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw, src += s.out_size) {
          for (int64_t oh = 0; oh < OH; ++oh) {
            float* row = xc + (oh * g.stride[0] + kh * g.dilation[0]) * W +
                         kw * g.dilation[1];
            const float* sr = src + oh * OW;
            for (int64_t ow = 0; ow < OW; ++ow) row[ow * g.stride[1]] += sr[ow];
          }
        }
      }
    }
    return;
  }
  std::vector<int64_t> k(r), o(r);
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    float* xc = x + c * s.in_size;
    for (int64_t kk = 0; kk < s.kernel_size; ++kk, ++row) {
      int64_t rem = kk;
      for (int d = r - 1; d >= 0; --d) {
        k[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      const float* src = col + row * s.out_size;
      for (int64_t j = 0; j < s.out_size; ++j) {
        int64_t p = j;
        for (int d = r - 1; d >= 0; --d) {
          o[d] = p % g.out[d];
          p /= g.out[d];
        }
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < r && inside; ++d) {
          const int64_t i =
              o[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
          inside = i >= 0 && i < g.in[d];
          off = off * g.in[d] + i;
        }
        if (inside) xc[off] += src[j];
      }
    }
  }
}

// Each output row's sums are its own and Eigen's depth blocking depends on
// the depth only, so the rows of a block are those of the whole, unless a
// block leaves Eigen's GEMM: for its coefficient-based product (depth + rows
// + cols < 20) or its matrix-vector one (one row or one column). Checked bit
// for bit (kernels_test, RowBlocksGiveTheBitsOfOneProduct).
bool RowBlocksAreBitNeutral(int64_t rows, int64_t block, int64_t depth,
                            int64_t min_cols) {
  const int64_t last = rows - block * ((rows + block - 1) / block - 1);
  const int64_t smallest = std::min(block, last);
  return smallest >= 2 && min_cols >= 2 && depth + smallest + min_cols >= 20;
}

void ConvForward(const ConvShape& s, const float* x, const float* w,
                 const float* bias, float* y, ThreadPool* pool,
                 const PackedWeights* packed) {
  const int64_t G = s.group;
  const int64_t Cg = s.in_channels / G;
  const int64_t Mg = s.out_channels / G;
  const int64_t OS = s.out_size;
  const int64_t IS = s.in_size;
  if (OS == 0 || s.batch == 0 || Mg == 0) return;
  if (Cg == 1 && Mg == 1 && s.geo.rank() == 2) {
    ParallelFor(pool, s.batch * G, GrainFor(2 * OS * s.kernel_size),
                [&](int64_t b, int64_t e) {
                  for (int64_t i = b; i < e; ++i) {
                    const int64_t c = i % G;
                    DepthwisePlane(s, x + i * IS, w + c * s.kernel_size,
                                   bias ? bias[c] : 0.0f, y + i * OS);
                  }
                });
    return;
  }
  const int64_t CK = Cg * s.kernel_size;
  if (packed != nullptr && (packed->data() != w || packed->depth() != CK)) {
    packed = nullptr;
  }
  const bool pointwise = IsPointwise(s.geo);
  // Work items are (image, group, column tile, output-channel block). Fewer
  // than kMinItems (small layers at batch 1) leaves a thread idle, so split
  // the output channels into 64-row blocks when there are many, else narrow
  // the column tiles, never below ~kMinChunkFlops an item. The split depends
  // on the shape only, never on the pool size, so results do not either.
  constexpr int64_t kMinItems = 8;
  constexpr int64_t kRowBlock = 64;
  int64_t T = TileWidth(CK, OS);
  const int64_t images = s.batch * G;
  const bool split_rows = Mg >= 2 * kRowBlock;
  if (!split_rows && images * ((OS + T - 1) / T) < kMinItems) {
    const auto round16 = [](int64_t v) { return (v + 15) / 16 * 16; };
    const int64_t want_tiles = (kMinItems + images - 1) / images;
    const int64_t min_width =
        round16((kMinChunkFlops + 2 * Mg * CK - 1) / (2 * Mg * CK));
    T = std::min(
        T, std::max(round16((OS + want_tiles - 1) / want_tiles), min_width));
  }
  const int64_t tiles = (OS + T - 1) / T;
  const int64_t base_items = images * tiles;
  int64_t m_blocks = base_items < kMinItems && split_rows
                         ? (Mg + kRowBlock - 1) / kRowBlock
                         : 1;
  // Without a worker to share them, row blocks only repack each tile's
  // columns once per block (a 960-channel 7x7 layer: 15 times); one block
  // gives the same bits where RowBlocksAreBitNeutral says so.
  const bool has_workers = pool != nullptr && pool->num_threads() > 0;
  if (m_blocks > 1 && !has_workers &&
      RowBlocksAreBitNeutral(Mg, kRowBlock, CK,
                             std::min(T, OS - (tiles - 1) * T))) {
    m_blocks = 1;
  }
  const int64_t m_step = m_blocks == 1 ? Mg : kRowBlock;
  // With packed weights a 1-D or 2-D layer's columns are packed straight
  // from the image (PackedWeights::MultiplyIm2Col) when they are unit-stride
  // along the width: copies of image rows. With a wider stride the packer
  // reads element by element, slower than Im2Col's loop (ppocr_det's stem:
  // 1.3x, executor_kernels_bench --benchmark_filter=PackedIm2Col).
  const bool from_image = packed != nullptr && !pointwise &&
                          Im2ColSourceOf(s, x, Cg, 0).has_value() &&
                          s.geo.stride.back() == 1;
  ParallelFor(pool, base_items * m_blocks, GrainFor(2 * m_step * CK * T),
              [&](int64_t b, int64_t e) {
                thread_local std::vector<float> col;
                for (int64_t it = b; it < e; ++it) {
                  const int64_t mb = it % m_blocks;
                  const int64_t item = it / m_blocks;
                  const int64_t tile = item % tiles;
                  const int64_t g = (item / tiles) % G;
                  const int64_t n = item / (tiles * G);
                  const int64_t p0 = tile * T;
                  const int64_t width = std::min(T, OS - p0);
                  const int64_t m0 = mb * m_step;
                  const int64_t rows = std::min(m_step, Mg - m0);
                  const float* xg = x + (n * s.in_channels + g * Cg) * IS;
                  float* yg = y + (n * s.out_channels + g * Mg + m0) * OS + p0;
                  if (bias != nullptr) {
                    for (int64_t m = 0; m < rows; ++m) {
                      std::fill_n(yg + m * OS, width, bias[g * Mg + m0 + m]);
                    }
                  }
                  if (from_image &&
                      packed->MultiplyIm2Col(g * Mg + m0, rows,
                                             *Im2ColSourceOf(s, xg, Cg, p0),
                                             width, yg, OS, bias != nullptr)) {
                    continue;
                  }
                  const float* cp;
                  int64_t col_stride;
                  if (pointwise) {
                    cp = xg + p0;
                    col_stride = IS;
                  } else {
                    col.resize(static_cast<size_t>(CK * width));
                    Im2Col(s, xg, Cg, p0, width, col.data());
                    cp = col.data();
                    col_stride = width;
                  }
                  if (packed != nullptr &&
                      packed->Multiply(g * Mg + m0, rows, cp, col_stride, width,
                                       yg, OS, bias != nullptr)) {
                    continue;
                  }
                  GemmBlock<float>(false, false, rows, width, CK, 1.0f,
                                   w + (g * Mg + m0) * CK, CK, cp, col_stride,
                                   yg, OS, bias != nullptr);
                }
              });
}

}  // namespace quantd::exec
