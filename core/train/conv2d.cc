#include "core/train/conv2d.h"

#include "absl/strings/str_cat.h"
#include "core/train/grouped_linear.h"

namespace quantd::train {
namespace {

template <typename T, typename Out>
void Patch(const ConvGeometry& g, const T* x, int64_t n, int64_t oh, int64_t ow,
           Out* patch) {
  int64_t k = 0;
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* plane = x + (n * g.channels + c) * g.height * g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t h = oh * g.stride_h - g.pad_top + i * g.dilation_h;
      for (int64_t j = 0; j < g.kernel_w; ++j, ++k) {
        const int64_t w = ow * g.stride_w - g.pad_left + j * g.dilation_w;
        patch[k] = h >= 0 && h < g.height && w >= 0 && w < g.width
                       ? static_cast<Out>(plane[h * g.width + w])
                       : Out{0};
      }
    }
  }
}

LinearShape ShapeOf(const ConvGeometry& g) {
  LinearShape s;
  s.rows = g.batch * g.OutHeight() * g.OutWidth();
  s.out = g.out_channels;
  s.in = g.PatchSize() / g.groups;
  s.groups = g.groups;
  return s;
}

}  // namespace

absl::Status ValidateConvGeometry(const ConvGeometry& g) {
  for (int64_t v : {g.batch, g.channels, g.height, g.width, g.out_channels,
                    g.kernel_h, g.kernel_w, g.stride_h, g.stride_w,
                    g.dilation_h, g.dilation_w, g.groups}) {
    if (v <= 0) return absl::InvalidArgumentError("non-positive conv size");
  }
  if (g.pad_top < 0 || g.pad_left < 0 || g.pad_bottom < 0 || g.pad_right < 0) {
    return absl::InvalidArgumentError("negative conv padding");
  }
  if (g.channels % g.groups != 0 || g.out_channels % g.groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("group ", g.groups, " does not divide channels ",
                     g.channels, " / ", g.out_channels));
  }
  if (g.OutHeight() <= 0 || g.OutWidth() <= 0) {
    return absl::InvalidArgumentError("empty conv output");
  }
  return absl::OkStatus();
}

void ConvPatch(const ConvGeometry& g, const float* x, int64_t n, int64_t oh,
               int64_t ow, double* patch) {
  Patch(g, x, n, oh, ow, patch);
}
void ConvPatch(const ConvGeometry& g, const double* x, int64_t n, int64_t oh,
               int64_t ow, double* patch) {
  Patch(g, x, n, oh, ow, patch);
}
void ConvPatch(const ConvGeometry& g, const float* x, int64_t n, int64_t oh,
               int64_t ow, float* patch) {
  Patch(g, x, n, oh, ow, patch);
}

void Conv2dForward(const ConvGeometry& g, const std::vector<double>& x,
                   const std::vector<double>& w,
                   const std::vector<double>& bias, std::vector<double>* y) {
  const LinearShape s = ShapeOf(g);
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), k = g.PatchSize();
  std::vector<double> p(s.rows * k);
  int64_t r = 0;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j, ++r) {
        Patch(g, x.data(), n, i, j, p.data() + r * k);
      }
    }
  }
  std::vector<double> rows;
  GroupedLinearForward(s, p, w, bias, &rows);
  // [N*OH*OW, M] -> [N, M, OH, OW].
  y->resize(g.batch * g.out_channels * oh * ow);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      for (int64_t q = 0; q < oh * ow; ++q) {
        (*y)[(n * g.out_channels + m) * oh * ow + q] =
            rows[(n * oh * ow + q) * g.out_channels + m];
      }
    }
  }
}

void Conv2dBackward(const ConvGeometry& g, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>& dy,
                    std::vector<double>* dx, std::vector<double>* dw,
                    std::vector<double>* db) {
  const LinearShape s = ShapeOf(g);
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), k = g.PatchSize();
  std::vector<double> p(s.rows * k), dyr(s.rows * g.out_channels);
  int64_t r = 0;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j, ++r) {
        Patch(g, x.data(), n, i, j, p.data() + r * k);
        for (int64_t m = 0; m < g.out_channels; ++m) {
          dyr[r * g.out_channels + m] =
              dy[((n * g.out_channels + m) * oh + i) * ow + j];
        }
      }
    }
  }
  std::vector<double> dp;
  GroupedLinearBackward(s, p, w, dyr, dx != nullptr ? &dp : nullptr, dw, db);
  if (dx == nullptr) return;
  // col2im: scatter each patch gradient back to the input positions.
  dx->assign(x.size(), 0.0);
  r = 0;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oi = 0; oi < oh; ++oi) {
      for (int64_t oj = 0; oj < ow; ++oj, ++r) {
        const double* row = dp.data() + r * k;
        int64_t q = 0;
        for (int64_t c = 0; c < g.channels; ++c) {
          double* plane =
              dx->data() + (n * g.channels + c) * g.height * g.width;
          for (int64_t i = 0; i < g.kernel_h; ++i) {
            const int64_t h = oi * g.stride_h - g.pad_top + i * g.dilation_h;
            for (int64_t j = 0; j < g.kernel_w; ++j, ++q) {
              const int64_t wc =
                  oj * g.stride_w - g.pad_left + j * g.dilation_w;
              if (h >= 0 && h < g.height && wc >= 0 && wc < g.width) {
                plane[h * g.width + wc] += row[q];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace quantd::train
