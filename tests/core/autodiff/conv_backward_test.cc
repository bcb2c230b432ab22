// The autodiff Conv backward (conv_backward.h) against its reference,
// core/train's Conv2dBackward (itself checked by finite differences in
// tests/core/train): the same float bits for every geometry, since the
// Hessian scores must not change when the kernel gets faster.
#include "core/autodiff/conv_backward.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/train/conv2d.h"
#include "gtest/gtest.h"

namespace quantd::autodiff::internal {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> ToFloat(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Bitwise equality (memcmp also tells -0 from +0).
void ExpectSameBits(const std::vector<float>& got,
                    const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << "[" << i << "]: " << got[i] << " vs " << want[i];
  }
}

// Both implementations on one geometry, with one Scratch reused twice (the
// second pass must not see the first one's leftovers).
void ExpectSameAsReference(const train::ConvGeometry& g) {
  ASSERT_TRUE(train::ValidateConvGeometry(g).ok());
  const int64_t xs = g.batch * g.channels * g.height * g.width;
  const int64_t ws = g.out_channels * g.PatchSize() / g.groups;
  const int64_t ys = g.batch * g.out_channels * g.OutHeight() * g.OutWidth();
  const std::vector<float> x = Random(xs, 1), w = Random(ws, 2);
  Scratch scratch;
  for (uint32_t pass = 0; pass < 2; ++pass) {
    const std::vector<float> dy = Random(ys, 3 + pass);
    std::vector<double> dx, dw(ws, 0.0), db(g.out_channels, 0.0);
    train::Conv2dBackward(g, std::vector<double>(x.begin(), x.end()),
                          std::vector<double>(w.begin(), w.end()),
                          std::vector<double>(dy.begin(), dy.end()), &dx, &dw,
                          &db);
    std::vector<float> gx(xs), gw(ws), gb(g.out_channels);
    ConvBackwardDouble(g, x.data(), w.data(), dy.data(), gx.data(), gw.data(),
                       gb.data(), &scratch);
    ExpectSameBits(gx, ToFloat(dx), "dx");
    ExpectSameBits(gw, ToFloat(dw), "dw");
    ExpectSameBits(gb, ToFloat(db), "db");
  }
}

train::ConvGeometry Geometry(int64_t c, int64_t h, int64_t w, int64_t m,
                             int64_t k) {
  train::ConvGeometry g;
  g.channels = c;
  g.height = h;
  g.width = w;
  g.out_channels = m;
  g.kernel_h = g.kernel_w = k;
  return g;
}

TEST(ConvBackwardDoubleTest, DenseUnpaddedMatchesConv2dBackwardBits) {
  ExpectSameAsReference(Geometry(3, 7, 9, 5, 3));
}

TEST(ConvBackwardDoubleTest, PaddedStridedDilatedMatchesConv2dBackwardBits) {
  train::ConvGeometry g = Geometry(4, 11, 13, 6, 3);
  g.batch = 2;
  g.stride_h = 2;
  g.stride_w = 3;
  g.dilation_h = 2;
  g.pad_top = 1;
  g.pad_left = 2;
  g.pad_bottom = 2;
  g.pad_right = 1;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, DepthwiseMatchesConv2dBackwardBits) {
  // Wide enough (more than 128 rows) for Eigen's blocked gemv path.
  train::ConvGeometry g = Geometry(24, 12, 20, 24, 5);
  g.groups = 24;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 2;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, WideDepthwiseMatchesConv2dBackwardBits) {
  // Patch rows of 160 * 25 doubles (32000 bytes): Eigen's gemv then sums 4
  // rows per block instead of 16, which the group-by-group buffer keeps.
  train::ConvGeometry g = Geometry(160, 12, 12, 160, 5);
  g.groups = 160;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 2;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, SmallStridedDepthwiseBatchMatchesBits) {
  // Fewer than 128 rows (one gemv block), two images, strides, dilation.
  train::ConvGeometry g = Geometry(6, 9, 11, 6, 3);
  g.batch = 2;
  g.groups = 6;
  g.stride_h = 2;
  g.stride_w = 2;
  g.dilation_w = 2;
  g.pad_top = g.pad_left = 1;
  g.pad_bottom = g.pad_right = 2;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, NonSquareDepthwiseMatchesConv2dBackwardBits) {
  // A 2x3 kernel: the depthwise path without a fixed-size kernel.
  train::ConvGeometry g = Geometry(10, 14, 15, 10, 2);
  g.kernel_w = 3;
  g.groups = 10;
  g.stride_w = 2;
  g.pad_left = g.pad_right = 1;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, TinyDepthwiseMatchesConv2dBackwardBits) {
  // rows + 1 + taps < 20: Eigen's coefficient-wise product, the patch path.
  ExpectSameAsReference([] {
    train::ConvGeometry g = Geometry(4, 3, 3, 4, 3);
    g.groups = 4;
    return g;
  }());
}

TEST(ConvBackwardDoubleTest, PointwiseDepthwiseMatchesConv2dBackwardBits) {
  train::ConvGeometry g = Geometry(8, 20, 20, 8, 1);  // one tap: patch path
  g.groups = 8;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, DensePointwiseBatchMatchesConv2dBackwardBits) {
  train::ConvGeometry g = Geometry(64, 10, 12, 48, 1);  // transposes only
  g.batch = 2;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, StridedPointwiseMatchesConv2dBackwardBits) {
  train::ConvGeometry g = Geometry(16, 9, 9, 24, 1);  // patches again
  g.stride_h = g.stride_w = 2;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, GroupedPointwiseMatchesConv2dBackwardBits) {
  train::ConvGeometry g = Geometry(8, 6, 6, 12, 1);
  g.groups = 4;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, LargeDenseMatchesConv2dBackwardBits) {
  // Deep enough (a few hundred columns, rows) for Eigen's blocked GEMM.
  train::ConvGeometry g = Geometry(48, 16, 24, 40, 3);
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, OneDimensionalMatchesConv2dBackwardBits) {
  train::ConvGeometry g = Geometry(5, 1, 40, 7, 1);
  g.kernel_w = 4;
  g.stride_w = 2;
  g.dilation_w = 3;
  g.pad_left = 3;
  ExpectSameAsReference(g);
}

TEST(ConvBackwardDoubleTest, KernelWiderThanPaddedInputMatchesBits) {
  // Taps that never land inside the image (a whole zero patch column).
  train::ConvGeometry g = Geometry(2, 3, 3, 3, 5);
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 2;
  g.stride_h = g.stride_w = 2;
  ExpectSameAsReference(g);
}

}  // namespace
}  // namespace quantd::autodiff::internal
