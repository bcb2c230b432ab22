#include "core/autodiff/conv_backward.h"

#include <algorithm>
#include <cstdint>

#include "core/train/grouped_linear.h"

namespace quantd::autodiff::internal {
namespace {

enum Slot { kPatches, kDyRows, kPatchGrads, kDx, kW, kDw };

// [lo, hi): the o in [0, out) with 0 <= o * stride + offset < width.
void ValidRange(int64_t offset, int64_t stride, int64_t width, int64_t out,
                int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = width - offset <= 0 ? 0 : (width - offset + stride - 1) / stride;
  *hi = std::min(*hi, out);
  if (*lo > *hi) *lo = *hi;
}

// Group `group`'s columns (c, i, j) of Conv2dForward's im2col patches of x
// (row r = (n, oh, ow), zero outside the image), at the start of rows K
// apart in p. Rows are written in order.
void Im2ColGroup(const train::ConvGeometry& g, int64_t group, const float* x,
                 double* p) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), k = g.PatchSize();
  const int64_t kh = g.kernel_h, kw = g.kernel_w;
  const int64_t cg = g.channels / g.groups;
  for (int64_t n = 0, r = 0; n < g.batch; ++n) {
    const float* image = x + (n * g.channels + group * cg) * g.height * g.width;
    for (int64_t oi = 0; oi < oh; ++oi) {
      for (int64_t oj = 0; oj < ow; ++oj, ++r) {
        const int64_t w0 = oj * g.stride_w - g.pad_left;
        int64_t lo = 0, hi = 0;  // taps j inside the row
        ValidRange(w0, g.dilation_w, g.width, kw, &lo, &hi);
        double* row = p + r * k;
        for (int64_t c = 0; c < cg; ++c) {
          const float* plane = image + c * g.height * g.width;
          for (int64_t i = 0; i < kh; ++i, row += kw) {
            const int64_t h = oi * g.stride_h - g.pad_top + i * g.dilation_h;
            if (h < 0 || h >= g.height) {
              std::fill(row, row + kw, 0.0);
              continue;
            }
            const float* src = plane + h * g.width + w0;
            for (int64_t j = 0; j < lo; ++j) row[j] = 0.0;
            for (int64_t j = lo; j < hi; ++j) {
              row[j] = static_cast<double>(src[j * g.dilation_w]);
            }
            for (int64_t j = hi; j < kw; ++j) row[j] = 0.0;
          }
        }
      }
    }
  }
}

// dx of group `group`'s channels = col2im of its patch gradients (laid out
// as Im2ColGroup's): rows in order and each row's columns in order, as
// Conv2dBackward adds them, so every element's double sum is the same.
void Col2ImGroup(const train::ConvGeometry& g, int64_t group, const double* dp,
                 double* dx) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), k = g.PatchSize();
  const int64_t kh = g.kernel_h, kw = g.kernel_w;
  const int64_t cg = g.channels / g.groups, hw = g.height * g.width;
  for (int64_t n = 0, r = 0; n < g.batch; ++n) {
    double* image = dx + (n * g.channels + group * cg) * hw;
    std::fill(image, image + cg * hw, 0.0);
    for (int64_t oi = 0; oi < oh; ++oi) {
      for (int64_t oj = 0; oj < ow; ++oj, ++r) {
        const int64_t w0 = oj * g.stride_w - g.pad_left;
        int64_t lo = 0, hi = 0;
        ValidRange(w0, g.dilation_w, g.width, kw, &lo, &hi);
        const double* row = dp + r * k;
        for (int64_t c = 0; c < cg; ++c) {
          double* plane = image + c * hw;
          for (int64_t i = 0; i < kh; ++i, row += kw) {
            const int64_t h = oi * g.stride_h - g.pad_top + i * g.dilation_h;
            if (h < 0 || h >= g.height) continue;
            double* dst = plane + h * g.width + w0;
            for (int64_t j = lo; j < hi; ++j) dst[j * g.dilation_w] += row[j];
          }
        }
      }
    }
  }
}

void ToFloat(const double* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace

// dst[t * stride + c] = src[c * cols + t] for c < channels, t < cols (a
// [channels, cols] float block to double rows), in tiles for the caches.
void PlanesToRows(const float* src, int64_t channels, int64_t cols, double* dst,
                  int64_t stride) {
  constexpr int64_t kTile = 16;
  for (int64_t c0 = 0; c0 < channels; c0 += kTile) {
    const int64_t c1 = std::min(channels, c0 + kTile);
    for (int64_t t0 = 0; t0 < cols; t0 += kTile) {
      const int64_t t1 = std::min(cols, t0 + kTile);
      for (int64_t t = t0; t < t1; ++t) {
        for (int64_t c = c0; c < c1; ++c) {
          dst[t * stride + c] = static_cast<double>(src[c * cols + t]);
        }
      }
    }
  }
}

// A 1x1 Conv with unit strides and no padding: its patch row r is x[:, r].
bool IsPointwise(const train::ConvGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 &&
         g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0 &&
         g.pad_bottom == 0 && g.pad_right == 0;
}

// Im2ColGroup and Col2ImGroup of a pointwise Conv: transposes. Each dx
// element has one term, which col2im adds to 0.0 (turning -0 into +0).
void PointwiseIm2ColGroup(const train::ConvGeometry& g, int64_t group,
                          const float* x, double* p) {
  const int64_t hw = g.height * g.width, cg = g.channels / g.groups;
  for (int64_t n = 0; n < g.batch; ++n) {
    PlanesToRows(x + (n * g.channels + group * cg) * hw, cg, hw,
                 p + n * hw * g.channels, g.channels);
  }
}

void PointwiseCol2ImGroup(const train::ConvGeometry& g, int64_t group,
                          const double* dp, double* dx) {
  const int64_t hw = g.height * g.width, cg = g.channels / g.groups;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < cg; ++c) {
      double* plane = dx + (n * g.channels + group * cg + c) * hw;
      const double* src = dp + n * hw * g.channels + c;
      for (int64_t t = 0; t < hw; ++t) plane[t] = 0.0 + src[t * g.channels];
    }
  }
}

// The general case: Conv2dBackward's patches and products, group by group.
void GroupedBackward(const train::ConvGeometry& g, const float* x,
                     const float* w, const float* dy, float* dx, float* dw,
                     Scratch* scratch) {
  train::LinearShape s;
  s.rows = g.batch * g.OutHeight() * g.OutWidth();
  s.out = g.out_channels;
  s.in = g.PatchSize() / g.groups;
  s.groups = g.groups;
  const int64_t q = g.OutHeight() * g.OutWidth(), k = g.PatchSize();
  const int64_t w_size = s.out * s.in;
  // One group at a time, its patches (and their gradients) at the start of
  // rows K apart: the products see the strides of the full patch matrix
  // (Eigen's blocking depends on them), the caches only the group's columns.
  double* p = scratch->Doubles(kPatches, s.rows * k);
  // dy [N, M, OH * OW] -> rows [N * OH * OW, M].
  double* dyr = scratch->Doubles(kDyRows, s.rows * s.out);
  for (int64_t n = 0; n < g.batch; ++n) {
    PlanesToRows(dy + n * s.out * q, s.out, q, dyr + n * q * s.out, s.out);
  }
  double* wd = scratch->Doubles(kW, w_size);
  for (int64_t i = 0; i < w_size; ++i) wd[i] = w[i];
  double* dp = nullptr;
  double* dxd = nullptr;
  const int64_t x_size = g.batch * g.channels * g.height * g.width;
  if (dx != nullptr) {
    dp = scratch->Doubles(kPatchGrads, s.rows * k);
    dxd = scratch->Doubles(kDx, x_size);
  }
  double* dwd = nullptr;
  if (dw != nullptr) {
    dwd = scratch->Doubles(kDw, w_size);
    std::fill(dwd, dwd + w_size, 0.0);
  }
  const bool pointwise = IsPointwise(g);
  for (int64_t group = 0; group < g.groups; ++group) {
    if (pointwise) {
      PointwiseIm2ColGroup(g, group, x, p);
    } else {
      Im2ColGroup(g, group, x, p);
    }
    train::GroupedLinearBackwardGroup(s, group, p, wd, dyr, dp, dwd);
    if (dx == nullptr) continue;
    if (pointwise) {
      PointwiseCol2ImGroup(g, group, dp, dxd);
    } else {
      Col2ImGroup(g, group, dp, dxd);
    }
  }
  if (dw != nullptr) ToFloat(dwd, w_size, dw);
  if (dx != nullptr) ToFloat(dxd, x_size, dx);
}

// Whether Conv2dBackward's products for this geometry are what
// the depthwise functions below reproduce: one channel per group in and out,
// more than one tap, and (Eigen's threshold for coefficient-wise products) rows
// + 1 + taps >= 20, so that the kernel gradient is Eigen's column-major gemv.
bool IsGemvDepthwise(const train::ConvGeometry& g) {
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int64_t rows = g.batch * g.OutHeight() * g.OutWidth();
  return g.groups == g.channels && g.out_channels == g.channels && taps > 1 &&
         rows + 1 + taps >= 20;
}

// A depthwise Conv's gradients without patches. Every product dy * x or
// dy * w of two floats is exact in double, so only the order of the sums
// matters. dw[c, tap] is Eigen's gemv sum over the rows r = (n, oh, ow):
// blocks of `block` rows, each summed from zero, added to the total in order
// (Eigen picks 16 or 4 by the patch row's bytes when there are 128 rows or
// more). Taps in the padding add (+-)0 to a sum that is never -0, so they
// are skipped.
// DepthwiseKernelGradient for a KH x KW kernel: every tap's partial sum in
// a register, the channel's image zero-padded into `padded` (padding adds
// dy * 0 = +-0, which changes no sum), one row r after the other.
template <int KH, int KW>
void DepthwiseKernelGradientFixed(const train::ConvGeometry& g, const float* x,
                                  const float* dy, int64_t block, float* dw,
                                  double* padded) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth();
  const int64_t hw = g.height * g.width;
  const int64_t hp = g.height + g.pad_top + g.pad_bottom;
  const int64_t wp = g.width + g.pad_left + g.pad_right;
  const int64_t dh = g.dilation_h * wp, dw_step = g.dilation_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    double total[KH * KW] = {}, partial[KH * KW] = {};
    int64_t in_block = 0;
    for (int64_t n = 0; n < g.batch; ++n) {
      const float* xc = x + (n * g.channels + c) * hw;
      const float* gc = dy + (n * g.channels + c) * oh * ow;
      std::fill(padded, padded + hp * wp, 0.0);
      for (int64_t h = 0; h < g.height; ++h) {
        double* dst = padded + (h + g.pad_top) * wp + g.pad_left;
        for (int64_t w = 0; w < g.width; ++w) dst[w] = xc[h * g.width + w];
      }
      for (int64_t oi = 0; oi < oh; ++oi) {
        const double* top = padded + oi * g.stride_h * wp;
        for (int64_t oj = 0; oj < ow; ++oj) {
          const double d = gc[oi * ow + oj];
          const double* base = top + oj * g.stride_w;
          for (int i = 0; i < KH; ++i) {
            for (int j = 0; j < KW; ++j) {
              partial[i * KW + j] += d * base[i * dh + j * dw_step];
            }
          }
          if (++in_block == block) {
            for (int t = 0; t < KH * KW; ++t) {
              total[t] += partial[t];
              partial[t] = 0.0;
            }
            in_block = 0;
          }
        }
      }
    }
    if (in_block > 0) {
      for (int t = 0; t < KH * KW; ++t) total[t] += partial[t];
    }
    for (int t = 0; t < KH * KW; ++t) {
      dw[c * KH * KW + t] = static_cast<float>(total[t]);
    }
  }
}

void DepthwiseKernelGradient(const train::ConvGeometry& g, const float* x,
                             const float* dy, float* dw, Scratch* scratch) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth();
  const int64_t kh = g.kernel_h, kw = g.kernel_w, taps = kh * kw;
  const int64_t hw = g.height * g.width, rows = g.batch * oh * ow;
  const int64_t patch_bytes = g.PatchSize() * int64_t{sizeof(double)};
  const int64_t block = rows < 128 ? rows : (patch_bytes < 32000 ? 16 : 4);
  const int64_t padded_size = (g.height + g.pad_top + g.pad_bottom) *
                              (g.width + g.pad_left + g.pad_right);
  if (kh == 3 && kw == 3) {
    return DepthwiseKernelGradientFixed<3, 3>(
        g, x, dy, block, dw, scratch->Doubles(kPatches, padded_size));
  }
  if (kh == 5 && kw == 5) {
    return DepthwiseKernelGradientFixed<5, 5>(
        g, x, dy, block, dw, scratch->Doubles(kPatches, padded_size));
  }
  double* total = scratch->Doubles(kDw, taps);
  double* partial = scratch->Doubles(kW, taps);
  for (int64_t c = 0; c < g.channels; ++c) {
    std::fill(total, total + taps, 0.0);
    std::fill(partial, partial + taps, 0.0);
    int64_t in_block = 0;
    for (int64_t n = 0; n < g.batch; ++n) {
      const float* xc = x + (n * g.channels + c) * hw;
      const float* gc = dy + (n * g.channels + c) * oh * ow;
      for (int64_t oi = 0; oi < oh; ++oi) {
        for (int64_t oj = 0; oj < ow; ++oj) {
          const int64_t w0 = oj * g.stride_w - g.pad_left;
          int64_t lo = 0, hi = 0;
          ValidRange(w0, g.dilation_w, g.width, kw, &lo, &hi);
          const double d = gc[oi * ow + oj];
          for (int64_t i = 0; i < kh; ++i) {
            const int64_t h = oi * g.stride_h - g.pad_top + i * g.dilation_h;
            if (h < 0 || h >= g.height) continue;
            const float* src = xc + h * g.width + w0;
            double* acc = partial + i * kw;
            for (int64_t j = lo; j < hi; ++j) {
              acc[j] += d * static_cast<double>(src[j * g.dilation_w]);
            }
          }
          if (++in_block == block) {
            for (int64_t t = 0; t < taps; ++t) total[t] += partial[t];
            std::fill(partial, partial + taps, 0.0);
            in_block = 0;
          }
        }
      }
    }
    if (in_block > 0) {
      for (int64_t t = 0; t < taps; ++t) total[t] += partial[t];
    }
    ToFloat(total, taps, dw + c * taps);
  }
}

// dx of a depthwise Conv: col2im adds an element's terms dy * w in row order
// (oh, ow). For one oh (one tap row i), ow ascending is tap j descending, so
// the loop runs j down and ow innermost (contiguous when the stride is 1).
void DepthwiseInputGradient(const train::ConvGeometry& g, const float* w,
                            const float* dy, float* dx, Scratch* scratch) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth();
  const int64_t kh = g.kernel_h, kw = g.kernel_w;
  const int64_t hw = g.height * g.width;
  double* plane = scratch->Doubles(kDx, hw);
  double* row = scratch->Doubles(kDyRows, ow);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const float* wc = w + c * kh * kw;
      const float* gc = dy + (n * g.channels + c) * oh * ow;
      std::fill(plane, plane + hw, 0.0);
      for (int64_t oi = 0; oi < oh; ++oi) {
        for (int64_t oj = 0; oj < ow; ++oj) row[oj] = gc[oi * ow + oj];
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t h = oi * g.stride_h - g.pad_top + i * g.dilation_h;
          if (h < 0 || h >= g.height) continue;
          for (int64_t j = kw - 1; j >= 0; --j) {
            const int64_t offset = j * g.dilation_w - g.pad_left;
            int64_t lo = 0, hi = 0;
            ValidRange(offset, g.stride_w, g.width, ow, &lo, &hi);
            const double wv = wc[i * kw + j];
            double* dst = plane + h * g.width + offset;
            if (g.stride_w == 1) {
              for (int64_t o = lo; o < hi; ++o) dst[o] += row[o] * wv;
            } else {
              for (int64_t o = lo; o < hi; ++o) {
                dst[o * g.stride_w] += row[o] * wv;
              }
            }
          }
        }
      }
      ToFloat(plane, hw, dx + (n * g.channels + c) * hw);
    }
  }
}

void ConvBackwardDouble(const train::ConvGeometry& g, const float* x,
                        const float* w, const float* dy, float* dx, float* dw,
                        float* db, Scratch* scratch) {
  if (dx != nullptr || dw != nullptr) {
    if (IsGemvDepthwise(g)) {
      if (dw != nullptr) DepthwiseKernelGradient(g, x, dy, dw, scratch);
      if (dx != nullptr) DepthwiseInputGradient(g, w, dy, dx, scratch);
    } else {
      GroupedBackward(g, x, w, dy, dx, dw, scratch);
    }
  }
  if (db != nullptr) {  // GroupedLinearBackward's sum over the rows in order
    const int64_t q = g.OutHeight() * g.OutWidth();
    for (int64_t m = 0; m < g.out_channels; ++m) {
      double sum = 0.0;
      for (int64_t n = 0; n < g.batch; ++n) {
        const float* gm = dy + (n * g.out_channels + m) * q;
        for (int64_t t = 0; t < q; ++t) sum += gm[t];
      }
      db[m] = static_cast<float>(sum);
    }
  }
}

}  // namespace quantd::autodiff::internal
