// 2-D convolution (ONNX Conv, NCHW, groups, strides, pads, dilations) as
// im2col + GroupedLinear, with its backward pass (dx through col2im). A 1-D
// Conv is the 2-D case with height 1.
#ifndef QUANTD_CORE_TRAIN_CONV2D_H_
#define QUANTD_CORE_TRAIN_CONV2D_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace quantd::train {

struct ConvGeometry {
  int64_t batch = 1, channels = 1, height = 1, width = 1;  // input
  int64_t out_channels = 1, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t groups = 1;

  int64_t OutHeight() const {
    return (height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) /
               stride_h +
           1;
  }
  int64_t OutWidth() const {
    return (width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) /
               stride_w +
           1;
  }
  // Columns of one patch: channels * kernel_h * kernel_w, ordered (c, kh, kw)
  // like the kernel [M, C/G, KH, KW] (group g's columns are contiguous).
  int64_t PatchSize() const { return channels * kernel_h * kernel_w; }
};

// Positive sizes, channels and out_channels divisible by groups, output
// non-empty.
absl::Status ValidateConvGeometry(const ConvGeometry& g);

// The patch of output position (n, oh, ow) from x [N, C, H, W] (zero padding).
void ConvPatch(const ConvGeometry& g, const float* x, int64_t n, int64_t oh,
               int64_t ow, double* patch);
void ConvPatch(const ConvGeometry& g, const double* x, int64_t n, int64_t oh,
               int64_t ow, double* patch);
void ConvPatch(const ConvGeometry& g, const float* x, int64_t n, int64_t oh,
               int64_t ow, float* patch);

// y [N, M, OH, OW] = conv(x [N, C, H, W], w [M, C/G, KH, KW]) + bias.
void Conv2dForward(const ConvGeometry& g, const std::vector<double>& x,
                   const std::vector<double>& w,
                   const std::vector<double>& bias, std::vector<double>* y);

// dx overwritten; dw / db accumulated (sized by the caller); any may be null.
void Conv2dBackward(const ConvGeometry& g, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>& dy,
                    std::vector<double>* dx, std::vector<double>* dw,
                    std::vector<double>* db);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_CONV2D_H_
