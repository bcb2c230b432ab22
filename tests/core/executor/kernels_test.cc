// Table-style kernel tests with hand-derived expected values.
#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/executor/conv_kernels.h"
#include "core/executor/full_panels_avx512.h"
#include "core/executor/gemm.h"
#include "core/executor/packed_gemm.h"
#include "core/runtime/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/executor/test_util.h"

namespace quantd {
namespace {

using ::quantd::testing::F;
using ::quantd::testing::Float;
using ::quantd::testing::I64;
using ::quantd::testing::Int;
using ::quantd::testing::Ints;
using ::quantd::testing::RunOp;
using ::quantd::testing::String;
using ::quantd::testing::Values;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::Pointwise;

struct PadCase {
  std::string mode;
  std::vector<float> expected;
};

TEST(PadKernelTest, ModesOnOneDimension) {
  // x = [1, 2, 3], pads = [2, 2]:
  //   constant: 0 0 | 1 2 3 | 0 0
  //   reflect (mirror without the edge): 3 2 | 1 2 3 | 2 1
  //   edge: 1 1 | 1 2 3 | 3 3
  //   wrap (periodic): 2 3 | 1 2 3 | 1 2
  const PadCase cases[] = {
      {"constant", {0, 0, 1, 2, 3, 0, 0}},
      {"reflect", {3, 2, 1, 2, 3, 2, 1}},
      {"edge", {1, 1, 1, 2, 3, 3, 3}},
      {"wrap", {2, 3, 1, 2, 3, 1, 2}},
  };
  for (const PadCase& c : cases) {
    absl::StatusOr<Tensor> y =
        RunOp("Pad", {F({1, 2, 3}, {3}), I64({2, 2}, {2})},
              {{"mode", String(c.mode)}}, 19);
    ASSERT_TRUE(y.ok()) << c.mode << ": " << y.status();
    EXPECT_THAT(Values(*y), ElementsAreArray(c.expected)) << c.mode;
  }
}

TEST(PadKernelTest, NegativePadsCropAndConstantValueInput) {
  // x = [1, 2, 3, 4], pads = [-1, 2], value 9 -> [2, 3, 4, 9, 9].
  absl::StatusOr<Tensor> y = RunOp(
      "Pad", {F({1, 2, 3, 4}, {4}), I64({-1, 2}, {2}), F({9}, {})}, {}, 13);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(2, 3, 4, 9, 9));
}

TEST(PadKernelTest, AttributeFormBeforeOpset11) {
  absl::StatusOr<Tensor> y =
      RunOp("Pad", {F({1, 2}, {2})},
            {{"pads", Ints({1, 0})}, {"value", Float(5)}}, 2);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(5, 1, 2));
}

TEST(PoolKernelTest, MaxPoolCeilModeKeepsPartialWindows) {
  // x = 1..16 as 4x4, kernel 3, stride 2. floor: (4-3)/2+1 = 1 output (max
  // of rows/cols 0..2 = 11). ceil: 2x2, windows rows {0..2, 2..3} x cols
  // {0..2, 2..3}: 11, 12, 15, 16.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i + 1;
  absl::StatusOr<Tensor> floor_y =
      RunOp("MaxPool", {F(v, {1, 1, 4, 4})},
            {{"kernel_shape", Ints({3, 3})}, {"strides", Ints({2, 2})}});
  ASSERT_TRUE(floor_y.ok()) << floor_y.status();
  EXPECT_THAT(floor_y->shape(), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(Values(*floor_y), ElementsAre(11));
  absl::StatusOr<Tensor> ceil_y = RunOp("MaxPool", {F(v, {1, 1, 4, 4})},
                                        {{"kernel_shape", Ints({3, 3})},
                                         {"strides", Ints({2, 2})},
                                         {"ceil_mode", Int(1)}});
  ASSERT_TRUE(ceil_y.ok()) << ceil_y.status();
  EXPECT_THAT(ceil_y->shape(), ElementsAre(1, 1, 2, 2));
  EXPECT_THAT(Values(*ceil_y), ElementsAre(11, 12, 15, 16));
}

TEST(PoolKernelTest, AveragePoolCountIncludePad) {
  // x = [[1, 2], [3, 4]], kernel 2, pads 1 all round, stride 1 -> 3x3.
  // Corner (0,0) sees only x[0][0] = 1: exclude pads 1/1 = 1, include 1/4.
  // Centre sees all four: 10/4 = 2.5 either way. Edge (0,1) sees 1,2:
  // 3/2 = 1.5 or 3/4 = 0.75.
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Ints({2, 2})},
                                            {"pads", Ints({1, 1, 1, 1})}};
  absl::StatusOr<Tensor> excl = RunOp("AveragePool", {x}, attrs);
  ASSERT_TRUE(excl.ok()) << excl.status();
  EXPECT_THAT(Values(*excl), ElementsAre(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4));
  attrs["count_include_pad"] = Int(1);
  absl::StatusOr<Tensor> incl = RunOp("AveragePool", {x}, attrs);
  ASSERT_TRUE(incl.ok()) << incl.status();
  EXPECT_THAT(Values(*incl),
              ElementsAre(0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1));
}

struct ResizeCase {
  std::string coord;
  std::string mode;
  std::string nearest;
  std::vector<float> expected;
};

TEST(ResizeKernelTest, CoordinateModesUpsampleByTwo) {
  // x = [0, 1, 2, 3] (value = index, so linear results are the mapped
  // coordinates clamped to [0, 3]); out[o] maps back to:
  //   asymmetric: o/2 -> 0, .5, 1, 1.5, 2, 2.5, 3, 3.5 (clamped 3)
  //   half_pixel: (o+.5)/2-.5 -> -.25 (clamped 0), .25, .75, ..., 3.25 (3)
  //   align_corners: o*3/7
  //   nearest, asymmetric+floor: 0 0 1 1 2 2 3 3
  //   nearest, half_pixel+round_prefer_ceil: -.25->0, .25->0, .75->1,
  //     1.25->1, 1.75->2, 2.25->2, 2.75->3, 3.25->3
  //   nearest, asymmetric+ceil: 0, .5->1, 1, 1.5->2, 2, 2.5->3, 3, 3.5->3
  const ResizeCase cases[] = {
      {"asymmetric", "linear", "", {0, .5, 1, 1.5, 2, 2.5, 3, 3}},
      {"half_pixel", "linear", "", {0, .25, .75, 1.25, 1.75, 2.25, 2.75, 3}},
      {"align_corners",
       "linear",
       "",
       {0, 3 / 7.f, 6 / 7.f, 9 / 7.f, 12 / 7.f, 15 / 7.f, 18 / 7.f, 3}},
      {"asymmetric", "nearest", "floor", {0, 0, 1, 1, 2, 2, 3, 3}},
      {"half_pixel", "nearest", "round_prefer_ceil", {0, 0, 1, 1, 2, 2, 3, 3}},
      {"asymmetric", "nearest", "ceil", {0, 1, 1, 2, 2, 3, 3, 3}},
  };
  for (const ResizeCase& c : cases) {
    std::map<std::string, Attribute> attrs = {
        {"coordinate_transformation_mode", String(c.coord)},
        {"mode", String(c.mode)}};
    if (!c.nearest.empty()) attrs["nearest_mode"] = String(c.nearest);
    absl::StatusOr<Tensor> y = RunOp(
        "Resize", {F({0, 1, 2, 3}, {4}), Tensor(), F({2}, {1})}, attrs, 13);
    ASSERT_TRUE(y.ok()) << c.coord << "/" << c.mode << ": " << y.status();
    EXPECT_THAT(Values(*y), Pointwise(FloatNear(1e-6), c.expected))
        << c.coord << "/" << c.mode << "/" << c.nearest;
  }
}

TEST(ResizeKernelTest, TfCropAndResizeExtrapolates) {
  // roi [0.5, 1.5] of x = [0, 1, 2, 3] to 3 outputs: x_orig = 0.5*3 + o *
  // 1.0*3/2 = 1.5, 3, 4.5; the last is outside [0, 3] -> extrapolation 7.
  absl::StatusOr<Tensor> y =
      RunOp("Resize",
            {F({0, 1, 2, 3}, {4}), F({0.5, 1.5}, {2}), Tensor(), I64({3}, {1})},
            {{"coordinate_transformation_mode", String("tf_crop_and_resize")},
             {"mode", String("linear")},
             {"extrapolation_value", Float(7)}},
            13);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1.5, 3, 7));
}

TEST(ConvKernelTest, GroupedConvolution) {
  // Two groups of one channel: c0 = [1, 2, 3] with w0 = [1, 1] -> [3, 5];
  // c1 = [4, 5, 6] with w1 = [1, -1] -> [-1, -1]; bias [10, 20].
  absl::StatusOr<Tensor> y =
      RunOp("Conv",
            {F({1, 2, 3, 4, 5, 6}, {1, 2, 1, 3}),
             F({1, 1, 1, -1}, {2, 1, 1, 2}), F({10, 20}, {2})},
            {{"group", Int(2)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(y->shape(), ElementsAre(1, 2, 1, 2));
  EXPECT_THAT(Values(*y), ElementsAre(13, 15, 19, 19));
}

TEST(ConvKernelTest, GroupedConvolutionTwoChannelsPerGroup) {
  // 4 input channels, 2 groups, 1x1 kernel: y0 = x0 + 2*x1, y1 = 3*x2 - x3.
  absl::StatusOr<Tensor> y = RunOp(
      "Conv", {F({1, 2, 3, 4}, {1, 4, 1, 1}), F({1, 2, 3, -1}, {2, 2, 1, 1})},
      {{"group", Int(2)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(5, 5));
}

TEST(ConvKernelTest, DilatedConvolution) {
  // x = [1..5], w = [1, 10], dilation 2: y[i] = x[i] + 10*x[i+2] -> 31 42 53.
  absl::StatusOr<Tensor> y = RunOp(
      "Conv", {F({1, 2, 3, 4, 5}, {1, 1, 1, 5}), F({1, 10}, {1, 1, 1, 2})},
      {{"dilations", Ints({1, 2})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(31, 42, 53));
}

TEST(ConvKernelTest, DepthwiseMatchesHandComputedWithPadding) {
  // Depthwise 3x3 all-ones kernel over a 3x3 all-ones plane, pad 1: each
  // output counts the in-image taps: corners 4, edges 6, centre 9. Channel 1
  // has weights 2 -> doubled, plus bias 1.
  std::vector<float> x(18, 1.0f);
  std::vector<float> w(18, 1.0f);
  for (int i = 9; i < 18; ++i) w[i] = 2.0f;
  absl::StatusOr<Tensor> y =
      RunOp("Conv", {F(x, {1, 2, 3, 3}), F(w, {2, 1, 3, 3}), F({0, 1}, {2})},
            {{"group", Int(2)}, {"pads", Ints({1, 1, 1, 1})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(4, 6, 4, 6, 9, 6, 4, 6, 4,  //
                                      9, 13, 9, 13, 19, 13, 9, 13, 9));
}

TEST(ConvKernelTest, SameUpperAndSameLowerPutOddPaddingAtOppositeEnds) {
  // x = [1, 2, 3, 4], w = [1, 1], stride 1, SAME: total pad 1. UPPER pads
  // the end: [1+2, 2+3, 3+4, 4+0]; LOWER pads the start: [0+1, 1+2, 2+3, 3+4].
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 1, 4});
  const Tensor w = F({1, 1}, {1, 1, 1, 2});
  absl::StatusOr<Tensor> upper =
      RunOp("Conv", {x, w}, {{"auto_pad", String("SAME_UPPER")}});
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_THAT(Values(*upper), ElementsAre(3, 5, 7, 4));
  absl::StatusOr<Tensor> lower =
      RunOp("Conv", {x, w}, {{"auto_pad", String("SAME_LOWER")}});
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_THAT(Values(*lower), ElementsAre(1, 3, 5, 7));
}

TEST(ConvTransposeKernelTest, OutputShapeAndOutputPadding) {
  // x = [1, 2], w = [1, 1], stride 2: full output = [1, 1, 2, 2].
  // output_shape 5 -> total pad 4 - 5 = -1, begin = -1 - floor(-1/2) = 0:
  // [1, 1, 2, 2, 0]. output_padding 1 gives the same 5 values.
  const Tensor x = F({1, 2}, {1, 1, 1, 2});
  const Tensor w = F({1, 1}, {1, 1, 1, 2});
  absl::StatusOr<Tensor> y =
      RunOp("ConvTranspose", {x, w},
            {{"strides", Ints({1, 2})}, {"output_shape", Ints({1, 5})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(y->shape(), ElementsAre(1, 1, 1, 5));
  EXPECT_THAT(Values(*y), ElementsAre(1, 1, 2, 2, 0));
  absl::StatusOr<Tensor> p =
      RunOp("ConvTranspose", {x, w},
            {{"strides", Ints({1, 2})}, {"output_padding", Ints({0, 1})}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Values(*p), ElementsAre(1, 1, 2, 2, 0));
}

TEST(ConvTransposeKernelTest, GroupsUseTheirOwnWeights) {
  // 2 groups, 1 channel each, 1x1 kernels 2 and 3: y = [2*x0, 3*x1].
  absl::StatusOr<Tensor> y =
      RunOp("ConvTranspose", {F({1, 5}, {1, 2, 1, 1}), F({2, 3}, {2, 1, 1, 1})},
            {{"group", Int(2)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(2, 15));
}

// Stride = kernel (2x2, stride 2, a decoder's upsampling; and 2x3, whose
// rows interleave three taps) with bias: every output element takes one
// tap. Checked against the formula y[o, KH*h+i, KW*w+j] = b[o] + sum_c
// x[c, h, w] * w[c, o, i, j] (double), and bit for bit against the same
// product cropped by an end pad of 1 (the general col2im and crop path),
// on the corner they share. Run with and without a pool (the single-image
// product splits its columns).
TEST(ConvTransposeKernelTest, NonOverlappingTapsMatchFormulaAndCroppedPath) {
  const int64_t C = 5, M = 3, H = 3, W = 4;
  for (const auto& [KH, KW] : {std::pair<int64_t, int64_t>{2, 2}, {2, 3}}) {
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> xv(C * H * W), wv(C * M * KH * KW), bv(M);
    for (float& v : xv) v = normal(rng);
    for (float& v : wv) v = normal(rng);
    for (float& v : bv) v = normal(rng);
    bv[1] = -0.0f;
    const Tensor x = F(xv, {1, C, H, W}), w = F(wv, {C, M, KH, KW});
    const Tensor b = F(bv, {M});
    const int64_t OH = KH * H, OW = KW * W;
    ThreadPool pool(2);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      absl::StatusOr<Tensor> y = RunOp("ConvTranspose", {x, w, b},
                                       {{"strides", Ints({KH, KW})}}, 17, p);
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_THAT(y->shape(), ElementsAre(1, M, OH, OW));
      const std::vector<float> got = Values(*y);
      for (int64_t o = 0; o < M; ++o) {
        for (int64_t r = 0; r < OH; ++r) {
          for (int64_t c = 0; c < OW; ++c) {
            double want = bv[o];
            for (int64_t k = 0; k < C; ++k) {
              want += static_cast<double>(xv[(k * H + r / KH) * W + c / KW]) *
                      wv[((k * M + o) * KH + r % KH) * KW + c % KW];
            }
            EXPECT_NEAR(got[(o * OH + r) * OW + c], want, 1e-5)
                << KW << ": " << o << " " << r << " " << c;
          }
        }
      }
      absl::StatusOr<Tensor> cropped = RunOp(
          "ConvTranspose", {x, w, b},
          {{"strides", Ints({KH, KW})}, {"pads", Ints({0, 0, 1, 1})}}, 17, p);
      ASSERT_TRUE(cropped.ok()) << cropped.status();
      ASSERT_THAT(cropped->shape(), ElementsAre(1, M, OH - 1, OW - 1));
      const std::vector<float> general = Values(*cropped);
      for (int64_t o = 0; o < M; ++o) {
        for (int64_t r = 0; r < OH - 1; ++r) {
          for (int64_t c = 0; c < OW - 1; ++c) {
            const float a = got[(o * OH + r) * OW + c];
            const float g = general[(o * (OH - 1) + r) * (OW - 1) + c];
            EXPECT_EQ(std::memcmp(&a, &g, sizeof(float)), 0)
                << KW << ": " << o << " " << r << " " << c;
          }
        }
      }
    }
  }
}

TEST(SliceKernelTest, NegativeStepsWithSentinels) {
  // x = 0..9, start -1 (= 9), end INT64_MIN (clamped to -1), step -3:
  // 9, 6, 3, 0.
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[i] = i;
  absl::StatusOr<Tensor> y =
      RunOp("Slice",
            {F(v, {10}), I64({-1}, {1}),
             I64({std::numeric_limits<int64_t>::min()}, {1}), I64({0}, {1}),
             I64({-3}, {1})},
            {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(9, 6, 3, 0));
}

TEST(SoftmaxKernelTest, Opset11CoercesTo2DOpset13UsesOneAxis) {
  // x = [[0, ln 3], [0, ln 3]]: opset 13, axis 0 normalises each column:
  // 0.5 everywhere. opset 11, axis 0 flattens all four: e^x / (2 + 6) ->
  // 1/8, 3/8, 1/8, 3/8.
  const float l3 = std::log(3.0f);
  const Tensor x = F({0, l3, 0, l3}, {2, 2});
  absl::StatusOr<Tensor> y13 = RunOp("Softmax", {x}, {{"axis", Int(0)}}, 13);
  ASSERT_TRUE(y13.ok()) << y13.status();
  EXPECT_THAT(Values(*y13), Pointwise(FloatNear(1e-6), {0.5, 0.5, 0.5, 0.5}));
  absl::StatusOr<Tensor> y11 = RunOp("Softmax", {x}, {{"axis", Int(0)}}, 11);
  ASSERT_TRUE(y11.ok()) << y11.status();
  EXPECT_THAT(Values(*y11),
              Pointwise(FloatNear(1e-6), {0.125, 0.375, 0.125, 0.375}));
}

TEST(ClipKernelTest, AttributeAndInputForms) {
  const Tensor x = F({-2, 0.5, 9}, {3});
  absl::StatusOr<Tensor> attr =
      RunOp("Clip", {x}, {{"min", Float(0)}, {"max", Float(6)}}, 6);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_THAT(Values(*attr), ElementsAre(0, 0.5, 6));
  // Only max given as input: no lower bound.
  absl::StatusOr<Tensor> in = RunOp("Clip", {x, Tensor(), F({1}, {})}, {}, 13);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_THAT(Values(*in), ElementsAre(-2, 0.5, 1));
}

TEST(QuantizeKernelTest, RoundsHalfToEvenAndSaturates) {
  // scale 0.5, zero point 10 (uint8): x/scale = 0.5 -> 0 (even), 1.5 -> 2,
  // 2.5 -> 2 (even), -40 + 10 saturates at 0, 200 + 10 = 210, 400 + 10
  // saturates at 255.
  Tensor zp(DType::kUint8, {});
  zp.mutable_data<uint8_t>()[0] = 10;
  absl::StatusOr<Tensor> y =
      RunOp("QuantizeLinear",
            {F({0.25, 0.75, 1.25, -20, 100, 200}, {6}), F({0.5}, {}), zp}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->dtype(), DType::kUint8);
  EXPECT_THAT(y->span<uint8_t>(), ElementsAre(10, 12, 12, 0, 210, 255));
}

TEST(GemmKernelTest, TransposesAlphaBetaAndBroadcastC) {
  // A^T with A = [[1, 2], [3, 4]] (so op(A) = [[1, 3], [2, 4]]), B = I,
  // alpha 2, C = [1, 1] (row broadcast), beta 3: 2*op(A) + 3.
  absl::StatusOr<Tensor> y =
      RunOp("Gemm",
            {F({1, 2, 3, 4}, {2, 2}), F({1, 0, 0, 1}, {2, 2}), F({1, 1}, {2})},
            {{"transA", Int(1)}, {"alpha", Float(2)}, {"beta", Float(3)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(5, 9, 7, 11));
}

TEST(MatMulKernelTest, BroadcastsBatchAndPromotesVectors) {
  // A [2, 1, 2] x B [2]: per batch a row vector . [1, 10].
  absl::StatusOr<Tensor> y =
      RunOp("MatMul", {F({1, 2, 3, 4}, {2, 1, 2}), F({1, 10}, {2})}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(y->shape(), ElementsAre(2, 1));
  EXPECT_THAT(Values(*y), ElementsAre(21, 43));
}

}  // namespace
}  // namespace quantd

namespace quantd {
namespace {

TEST(BinaryKernelTest, IntegerOverflowWrapsInsteadOfTrapping) {
  // INT64_MIN / -1 traps on x86 if computed directly; ONNX Runtime wraps
  // it to INT64_MIN. INT64_MAX + 1 wraps to INT64_MIN as well.
  const int64_t min = std::numeric_limits<int64_t>::min();
  const int64_t max = std::numeric_limits<int64_t>::max();
  absl::StatusOr<Tensor> d = testing::RunOp(
      "Div", {testing::I64({min, 7}, {2}), testing::I64({-1, -2}, {2})}, {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->span<int64_t>(), ::testing::ElementsAre(min, -3));
  absl::StatusOr<Tensor> a = testing::RunOp(
      "Add", {testing::I64({max}, {1}), testing::I64({1}, {1})}, {});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->span<int64_t>(), ::testing::ElementsAre(min));
  absl::StatusOr<Tensor> z = testing::RunOp(
      "Div", {testing::I64({1}, {1}), testing::I64({0}, {1})}, {});
  EXPECT_TRUE(absl::IsInvalidArgument(z.status())) << z.status();
}

// Each op accepts the element types of its ONNX definition: logic ops bool,
// BitShift unsigned integers, Sum and Mean floating point; any other type is
// refused with the node and the type named, not computed.
TEST(BinaryKernelTest, OpsRefuseTypesOutsideTheirDefinition) {
  const Tensor f = F({1, 0}, {2});
  const Tensor i = testing::I64({3, 1}, {2});
  for (const char* op : {"And", "Or", "Xor"}) {
    absl::StatusOr<Tensor> r = testing::RunOp(op, {f, f}, {});
    EXPECT_FALSE(r.ok()) << op;
    EXPECT_THAT(r.status().message(),
                ::testing::HasSubstr(absl::StrCat("(", op,
                                                  "): element type "
                                                  "float is not supported")));
  }
  absl::StatusOr<Tensor> shift =
      testing::RunOp("BitShift", {i, i}, {{"direction", String("LEFT")}});
  EXPECT_THAT(shift.status().message(), ::testing::HasSubstr("unsigned"));
  for (const char* op : {"Sum", "Mean"}) {
    absl::StatusOr<Tensor> r = testing::RunOp(op, {i, i}, {});
    EXPECT_FALSE(r.ok()) << op;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("int64")) << op;
  }
  // Where the definition allows them the same types still run: Max of
  // int64, Equal of floats, Xor of bools.
  absl::StatusOr<Tensor> max = testing::RunOp("Max", {i, I64({2}, {1})}, {});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_THAT(max->span<int64_t>(), ElementsAre(3, 2));
  absl::StatusOr<Tensor> eq = testing::RunOp("Equal", {f, F({1}, {1})}, {});
  ASSERT_TRUE(eq.ok()) << eq.status();
  EXPECT_THAT(eq->span<bool>(), ElementsAre(true, false));
  const Tensor b = Tensor::FromVector<bool>({true, false}, {2});
  absl::StatusOr<Tensor> x = testing::RunOp("Xor", {b, b}, {});
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_THAT(x->span<bool>(), ElementsAre(false, false));
}

std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct PoolGeometry {
  std::vector<int64_t> input, kernel, strides, pads, dilations;
  int64_t ceil_mode, count_include_pad;
};

// The float kernels take a row-wise fast path; double takes the generic
// per-window reference loop. Both must agree on every geometry (float sums
// in tap order vs double sums: within 1e-5 for |x| <= 2 and <= 25 taps).
TEST(PoolKernelTest, FloatFastPathMatchesGenericDoublePath) {
  const std::vector<PoolGeometry> cases = {
      {{1, 3, 9, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0},
      {{1, 2, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0},
      {{2, 2, 7, 10}, {3, 2}, {1, 3}, {1, 0, 2, 1}, {1, 1}, 1, 0},
      {{1, 2, 7, 10}, {3, 2}, {1, 3}, {1, 0, 2, 1}, {1, 1}, 1, 1},
      {{1, 1, 12, 12}, {3, 3}, {2, 2}, {2, 2, 2, 2}, {2, 2}, 0, 1},
      {{1, 4, 6, 5}, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 0, 0},
      {{1, 3, 20}, {4}, {2}, {1, 2}, {1}, 1, 1},
  };
  int seed = 0;
  for (const PoolGeometry& g : cases) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      const std::string label =
          absl::StrCat(op, " input ", absl::StrJoin(g.input, "x"), " kernel ",
                       absl::StrJoin(g.kernel, "x"), " ceil ", g.ceil_mode,
                       " include_pad ", g.count_include_pad);
      std::map<std::string, Attribute> attrs = {
          {"kernel_shape", Ints(g.kernel)},
          {"strides", Ints(g.strides)},
          {"pads", Ints(g.pads)},
          {"ceil_mode", Int(g.ceil_mode)}};
      if (std::string(op) == "MaxPool") {
        attrs["dilations"] = Ints(g.dilations);
      } else {
        attrs["count_include_pad"] = Int(g.count_include_pad);
        if (g.dilations[0] != 1) continue;  // AveragePool dilations: opset 19
      }
      const std::vector<float> v = RandomValues(NumElements(g.input), ++seed);
      const Tensor xf = F(v, g.input);
      const Tensor xd = Tensor::FromVector<double>(
          std::vector<double>(v.begin(), v.end()), g.input);
      absl::StatusOr<Tensor> yf = RunOp(op, {xf}, attrs);
      absl::StatusOr<Tensor> yd = RunOp(op, {xd}, attrs);
      ASSERT_TRUE(yf.ok()) << label << ": " << yf.status();
      ASSERT_TRUE(yd.ok()) << label << ": " << yd.status();
      ASSERT_EQ(yf->shape(), yd->shape()) << label;
      for (int64_t i = 0; i < yf->num_elements(); ++i) {
        EXPECT_NEAR(yf->data<float>()[i], yd->data<double>()[i], 1e-5)
            << label << " element " << i;
      }
    }
  }
}

// Depthwise convolutions (one channel per group) take a direct row kernel;
// the same weights with a depth multiplier of 2 (two outputs per group) take
// im2col + GEMM. Output 2c of the latter must equal output c of the former.
TEST(ConvKernelTest, DepthwiseRowKernelMatchesIm2ColPath) {
  struct Case {
    int64_t c, h, w, k, stride, pad, dilation;
  };
  const std::vector<Case> cases = {
      {3, 9, 13, 3, 1, 1, 1},  {2, 10, 11, 3, 2, 1, 1}, {2, 8, 9, 5, 1, 2, 1},
      {2, 12, 12, 5, 2, 2, 1}, {2, 9, 10, 3, 1, 2, 2},  {1, 6, 4, 3, 3, 0, 1},
      {2, 7, 7, 7, 1, 3, 1}};
  int seed = 100;
  for (const Case& c : cases) {
    const std::string label =
        absl::StrCat("c", c.c, " ", c.h, "x", c.w, " k", c.k, " s", c.stride,
                     " p", c.pad, " d", c.dilation);
    const std::vector<float> x = RandomValues(c.c * c.h * c.w, ++seed);
    const std::vector<float> w = RandomValues(c.c * c.k * c.k, ++seed);
    const std::vector<float> b = RandomValues(c.c, ++seed);
    std::vector<float> w2, b2;
    for (int64_t ch = 0; ch < c.c; ++ch) {
      for (int rep = 0; rep < 2; ++rep) {
        w2.insert(w2.end(), w.begin() + ch * c.k * c.k,
                  w.begin() + (ch + 1) * c.k * c.k);
        b2.push_back(b[ch]);
      }
    }
    const std::map<std::string, Attribute> attrs = {
        {"group", Int(c.c)},
        {"strides", Ints({c.stride, c.stride})},
        {"pads", Ints({c.pad, c.pad, c.pad, c.pad})},
        {"dilations", Ints({c.dilation, c.dilation})}};
    absl::StatusOr<Tensor> direct =
        RunOp("Conv",
              {F(x, {1, c.c, c.h, c.w}), F(w, {c.c, 1, c.k, c.k}), F(b, {c.c})},
              attrs);
    absl::StatusOr<Tensor> gemm =
        RunOp("Conv",
              {F(x, {1, c.c, c.h, c.w}), F(w2, {2 * c.c, 1, c.k, c.k}),
               F(b2, {2 * c.c})},
              attrs);
    ASSERT_TRUE(direct.ok()) << label << ": " << direct.status();
    ASSERT_TRUE(gemm.ok()) << label << ": " << gemm.status();
    const int64_t plane = direct->dim(2) * direct->dim(3);
    ASSERT_EQ(gemm->dim(2) * gemm->dim(3), plane) << label;
    for (int64_t ch = 0; ch < c.c; ++ch) {
      for (int64_t i = 0; i < plane; ++i) {
        EXPECT_NEAR(direct->data<float>()[ch * plane + i],
                    gemm->data<float>()[2 * ch * plane + i], 1e-5)
            << label << " channel " << ch << " element " << i;
      }
    }
  }
}

// The direct depthwise kernels (a row at a time near the vertical padding,
// every tap in registers elsewhere) add each output's taps one by one to
// the bias in (kh, kw) order, skipping the padding: equal bit for bit to
// that loop, with every step fused (std::fma) or every step rounded twice,
// whichever the executor was built with.
TEST(ConvKernelTest, DepthwiseAddsTapsInWindowOrderBitForBit) {
  struct Case {
    int64_t h, w, k, stride, pad;
  };
  const std::vector<Case> cases = {
      {9, 13, 3, 1, 1},
      {10, 37, 3, 2, 1},
      {8, 29, 5, 1, 2},
      {12, 40, 5, 2, 2},
      {7, 7, 3, 1, 0},
      {6, 5, 5, 2, 1},
      {16, 19, 3, 2, 0},
      {5, 70, 3, 1, 1},
      // Stride 1, output as wide as the input: the flat-band kernel.
      {7, 7, 3, 1, 1},
      {14, 14, 3, 1, 1},
      {4, 3, 3, 1, 1},
      {9, 5, 5, 1, 2},
      {11, 6, 5, 1, 2},
      {3, 17, 3, 1, 1},
      {2, 8, 3, 1, 1},
      {1, 9, 3, 1, 1}};
  int seed = 300;
  for (const Case& c : cases) {
    const std::string label =
        absl::StrCat(c.h, "x", c.w, " k", c.k, " s", c.stride, " p", c.pad);
    const int64_t ch = 2;
    const std::vector<float> x = RandomValues(ch * c.h * c.w, ++seed);
    const std::vector<float> w = RandomValues(ch * c.k * c.k, ++seed);
    const std::vector<float> b = RandomValues(ch, ++seed);
    absl::StatusOr<Tensor> y = RunOp(
        "Conv", {F(x, {1, ch, c.h, c.w}), F(w, {ch, 1, c.k, c.k}), F(b, {ch})},
        {{"group", Int(ch)},
         {"strides", Ints({c.stride, c.stride})},
         {"pads", Ints({c.pad, c.pad, c.pad, c.pad})}});
    ASSERT_TRUE(y.ok()) << label << ": " << y.status();
    const int64_t oh_n = y->dim(2), ow_n = y->dim(3);
    int fused = 0, unfused = 0;
    for (int64_t m = 0; m < ch; ++m) {
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          float f = b[m], u = b[m];
          for (int64_t kh = 0; kh < c.k; ++kh) {
            for (int64_t kw = 0; kw < c.k; ++kw) {
              const int64_t ih = oh * c.stride - c.pad + kh;
              const int64_t iw = ow * c.stride - c.pad + kw;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              const float wv = w[(m * c.k + kh) * c.k + kw];
              const float xv = x[(m * c.h + ih) * c.w + iw];
              f = std::fma(wv, xv, f);
              const float p = wv * xv;  // no FMA in this test's build
              u = u + p;
            }
          }
          const float got = y->data<float>()[(m * oh_n + oh) * ow_n + ow];
          fused += std::memcmp(&got, &f, sizeof(float)) == 0;
          unfused += std::memcmp(&got, &u, sizeof(float)) == 0;
        }
      }
    }
    const int total = static_cast<int>(ch * oh_n * ow_n);
    EXPECT_TRUE(fused == total || unfused == total)
        << label << ": " << fused << " fused and " << unfused
        << " unfused matches of " << total;
  }
}

// ConvForward splits a small layer's output channels into 64-row blocks only
// for pool workers. Oracle: Eigen's one product over all rows; wherever
// RowBlocksAreBitNeutral says so, the blocks give the same bits.
TEST(ConvKernelTest, RowBlocksGiveTheBitsOfOneProduct) {
  int seed = 500, neutral = 0;
  for (int64_t m : {128, 129, 130, 150, 200, 320, 960}) {
    for (int64_t k : {1, 3, 9, 16, 27, 144, 289, 300, 577, 1000}) {
      for (int64_t n : {2, 3, 7, 13, 49}) {
        if (!exec::RowBlocksAreBitNeutral(m, 64, k, n)) continue;
        ++neutral;
        const std::vector<float> w = RandomValues(m * k, ++seed);
        const std::vector<float> x = RandomValues(k * n, ++seed);
        const std::vector<float> b = RandomValues(m, ++seed);
        std::vector<float> whole(m * n), blocks(m * n);
        // Rows [m0, m0 + rows) of bias + w * x, as ConvForward computes a
        // block (EigenGemmBlock is Eigen's product, compiled once).
        auto product = [&](int64_t m0, int64_t rows, float* y) {
          for (int64_t r = 0; r < rows; ++r) {
            std::fill(y + (m0 + r) * n, y + (m0 + r + 1) * n, b[m0 + r]);
          }
          exec::EigenGemmBlock<float>(false, false, rows, n, k, 1.0f,
                                      w.data() + m0 * k, k, x.data(), n,
                                      y + m0 * n, n, /*accumulate=*/true);
        };
        product(0, m, whole.data());
        for (int64_t m0 = 0; m0 < m; m0 += 64) {
          product(m0, std::min<int64_t>(64, m - m0), blocks.data());
        }
        EXPECT_EQ(std::memcmp(whole.data(), blocks.data(),
                              whole.size() * sizeof(float)),
                  0)
            << "m " << m << " k " << k << " n " << n;
      }
    }
  }
  EXPECT_GT(neutral, 250);
  // The exceptions: a block of one row, one column, or Eigen's
  // coefficient-based product for tiny operands.
  EXPECT_FALSE(exec::RowBlocksAreBitNeutral(129, 64, 300, 49));
  EXPECT_FALSE(exec::RowBlocksAreBitNeutral(200, 64, 300, 1));
  EXPECT_FALSE(exec::RowBlocksAreBitNeutral(200, 64, 3, 7));
}

// A layer small enough for row blocks (batch 1, 7x7, 960 and 130 outputs):
// the same bits on the caller alone and with a pool worker.
TEST(ConvKernelTest, SameBitsWithAndWithoutPoolWorkers) {
  struct Case {
    int64_t c, m, hw, k;
  };
  ThreadPool pool(1);
  int seed = 700;
  for (const Case& c : std::vector<Case>{{160, 960, 7, 1}, {8, 130, 5, 3}}) {
    const std::vector<float> x = RandomValues(c.c * c.hw * c.hw, ++seed);
    const std::vector<float> w = RandomValues(c.m * c.c * c.k * c.k, ++seed);
    const std::vector<float> b = RandomValues(c.m, ++seed);
    const int64_t pad = c.k / 2;
    const std::vector<Tensor> in = {F(x, {1, c.c, c.hw, c.hw}),
                                    F(w, {c.m, c.c, c.k, c.k}), F(b, {c.m})};
    const std::map<std::string, Attribute> attrs = {
        {"pads", Ints({pad, pad, pad, pad})}};
    absl::StatusOr<Tensor> alone = RunOp("Conv", in, attrs);
    absl::StatusOr<Tensor> shared = RunOp("Conv", in, attrs, 17, &pool);
    ASSERT_TRUE(alone.ok()) << alone.status();
    ASSERT_TRUE(shared.ok()) << shared.status();
    ASSERT_EQ(alone->num_elements(), shared->num_elements());
    EXPECT_EQ(std::memcmp(alone->data<float>(), shared->data<float>(),
                          alone->byte_size()),
              0)
        << c.c << " -> " << c.m << " at " << c.hw << "x" << c.hw;
  }
}

// Eigen's GEMM blocking, and so a product's bits, follows the cache sizes
// it is given. The process starts with the pinned ones whatever CPUID says;
// a machine reporting other sizes (set here) blocks the depth of a
// 64 x 1000 x 64 product differently and gets other bits, and pinning gives
// back the pinned blocking's bits.
TEST(PackedWeightsTest, GemmBlockingUsesThePinnedCacheSizes) {
  EXPECT_EQ(Eigen::l1CacheSize(), 48 << 10);
  EXPECT_EQ(Eigen::l2CacheSize(), 1 << 20);
  EXPECT_EQ(Eigen::l3CacheSize(), std::ptrdiff_t{384} << 20);
  const int64_t m = 64, k = 1000, n = 64;
  const std::vector<float> a = RandomValues(m * k, 7);
  const std::vector<float> b = RandomValues(k * n, 8);
  // The executor's own Eigen product (EigenGemmBlock): an Eigen product written
  // here would be another instantiation, compiled without AVX2.
  auto product = [&] {
    std::vector<float> y(m * n);
    exec::EigenGemmBlock<float>(false, false, m, n, k, 1.0f, a.data(), k,
                                b.data(), n, y.data(), n, /*accumulate=*/false);
    return y;
  };
  const std::vector<float> pinned = product();
  Eigen::setCpuCacheSizes(16 << 10, 256 << 10, 8 << 20);
  const std::vector<float> other = product();
  exec::PinGemmCacheSizes();
  const std::vector<float> repinned = product();
  EXPECT_EQ(Eigen::l1CacheSize(), 48 << 10);
  EXPECT_NE(pinned, other);
  EXPECT_EQ(pinned, repinned);
}

// PackedWeights runs Eigen's GEMM with the weights packed once. Oracle:
// Eigen's own product (EigenGemmBlock, compiled once in the executor library),
// bit for bit, over shapes that block the depth (> 288), the rows and the
// columns, row ranges of a larger weight, with and without accumulation,
// and each case twice (the second from the cache).
TEST(PackedWeightsTest, SameBitsAsEigensProduct) {
  struct Case {
    int64_t total_rows, row0, rows, depth, width;
  };
  int seed = 900;
  for (const Case& c : std::vector<Case>{{16, 0, 16, 8, 49},
                                         {160, 0, 160, 960, 49},
                                         {960, 0, 960, 160, 49},
                                         {1280, 0, 1280, 320, 49},
                                         {24, 0, 24, 144, 3136},
                                         {32, 0, 32, 27, 12544},
                                         {130, 64, 64, 300, 13},
                                         {130, 128, 2, 9, 17},
                                         {96, 0, 96, 577, 2},
                                         {40, 8, 3, 1000, 2000}}) {
    const std::vector<float> w = RandomValues(c.total_rows * c.depth, ++seed);
    const std::vector<float> x = RandomValues(c.depth * c.width, ++seed);
    const std::vector<float> start = RandomValues(c.rows * c.width, ++seed);
    exec::PackedWeights packed(w.data(), c.total_rows, c.depth);
    for (int pass = 0; pass < 2; ++pass) {
      for (bool accumulate : {false, true}) {
        std::vector<float> want = start, got = start;
        exec::EigenGemmBlock<float>(false, false, c.rows, c.width, c.depth,
                                    1.0f, w.data() + c.row0 * c.depth, c.depth,
                                    x.data(), c.width, want.data(), c.width,
                                    accumulate);
        ASSERT_TRUE(packed.Multiply(c.row0, c.rows, x.data(), c.width, c.width,
                                    got.data(), c.width, accumulate));
        EXPECT_EQ(
            std::memcmp(want.data(), got.data(), want.size() * sizeof(float)),
            0)
            << c.rows << "x" << c.depth << " * " << c.depth << "x" << c.width
            << " pass " << pass << " accumulate " << accumulate;
      }
    }
  }
  // Where Eigen does not use its blocked GEMM, Multiply leaves it to Eigen.
  const std::vector<float> w = RandomValues(64 * 8, 1);
  exec::PackedWeights packed(w.data(), 64, 8);
  std::vector<float> x(8 * 64), y(64 * 64, 7.0f);
  EXPECT_FALSE(packed.Multiply(0, 1, x.data(), 64, 64, y.data(), 64, false));
  EXPECT_FALSE(packed.Multiply(0, 64, x.data(), 1, 1, y.data(), 1, false));
  EXPECT_FALSE(packed.Multiply(0, 4, x.data(), 5, 5, y.data(), 5, false));
  EXPECT_FALSE(packed.Multiply(60, 8, x.data(), 64, 64, y.data(), 64, false));
  EXPECT_EQ(packed.packed_bytes(), 0);
  EXPECT_EQ(y[0], 7.0f);
}

// MultiplyIm2Col packs a convolution's columns from the image. Oracle:
// Multiply on Im2Col's buffer (itself Eigen's bits, above), bit for bit,
// over strides, dilations, uneven padding wider than the kernel, tiles that
// start mid-row and span rows, images narrower than a packet, and 1-D.
TEST(PackedWeightsTest, Im2ColFromTheImageGivesTheBitsOfTheBuffer) {
  struct Case {
    int64_t c, m, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  };
  int seed = 950, products = 0;
  for (const Case& c :
       std::vector<Case>{{96, 24, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                         {3, 16, 33, 31, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
                         {8, 12, 17, 23, 3, 5, 1, 2, 2, 1, 0, 2, 3, 2},
                         {16, 8, 6, 5, 3, 3, 1, 1, 3, 3, 4, 4, 4, 4},
                         {5, 7, 9, 40, 2, 7, 1, 1, 1, 1, 1, 3, 0, 3},
                         {6, 10, 1, 300, 1, 5, 1, 1, 1, 2, 0, 4, 0, 4},
                         {4, 9, 1, 301, 1, 3, 1, 3, 1, 1, 0, 1, 0, 0},
                         // Depth blocks (2304 rows), 6-panel tiles and a
                         // tail, single columns, many row blocks.
                         {256, 40, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                         {32, 30, 30, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                         {24, 27, 80, 80, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1},
                         // Pointwise: the image is the column matrix.
                         {64, 96, 20, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}}) {
    exec::ConvShape s;
    s.geo.in = {c.h, c.w};
    s.geo.kernel = {c.kh, c.kw};
    s.geo.stride = {c.sh, c.sw};
    s.geo.dilation = {c.dh, c.dw};
    s.geo.pad_begin = {c.pt, c.pl};
    s.geo.pad_end = {c.pb, c.pr};
    s.geo.out = {(c.h + c.pt + c.pb - (c.kh - 1) * c.dh - 1) / c.sh + 1,
                 (c.w + c.pl + c.pr - (c.kw - 1) * c.dw - 1) / c.sw + 1};
    exec::Im2ColSource src;
    if (c.h == 1) {  // 1-D: the geometry of the width alone
      s.geo = {{c.w}, {c.kw}, {c.sw}, {c.dw}, {c.pl}, {c.pr}, {s.geo.out[1]}};
      src = {nullptr, c.c, 1,    c.w, 1,    c.kw,        1,
             c.sw,    1,   c.dw, 0,   c.pl, s.geo.out[0]};
    } else {
      src = {nullptr, c.c,  c.h,  c.w,  c.kh, c.kw,        c.sh,
             c.sw,    c.dh, c.dw, c.pt, c.pl, s.geo.out[1]};
    }
    s.in_channels = c.c;
    s.kernel_size = c.kh * c.kw;
    const int64_t out_size =
        s.geo.rank() == 2 ? s.geo.out[0] * s.geo.out[1] : s.geo.out[0];
    const int64_t depth = c.c * c.kh * c.kw;
    const std::vector<float> x = RandomValues(c.c * c.h * c.w, ++seed);
    const std::vector<float> w = RandomValues(c.m * depth, ++seed);
    exec::PackedWeights packed(w.data(), c.m, depth);
    src.x = x.data();
    // Widths 136 and 40 leave a 2-packet panel after the 3-packet ones.
    for (const auto& [p0, cap] :
         std::vector<std::pair<int64_t, int64_t>>{{0, 131},
                                                  {5, 131},
                                                  {out_size / 3, 131},
                                                  {0, out_size},
                                                  {0, 136},
                                                  {3, 40}}) {
      const int64_t width = std::min<int64_t>(out_size - p0, cap);
      std::vector<float> col(depth * width);
      exec::Im2Col(s, x.data(), c.c, p0, width, col.data());
      std::vector<float> want(c.m * width), got(c.m * width);
      src.p0 = p0;
      // Eigen's own kernels on the buffer, against the image read with the
      // AVX-512 kernels (where the CPU has them: the full panels straight
      // from the image) and without.
      exec::SetFullPanelsAvx512Enabled(false);
      ASSERT_TRUE(packed.Multiply(0, c.m, col.data(), width, width, want.data(),
                                  width, false));
      for (bool avx512 : {true, false}) {
        exec::SetFullPanelsAvx512Enabled(avx512);
        std::fill(got.begin(), got.end(), 7.0f);
        ASSERT_TRUE(packed.MultiplyIm2Col(0, c.m, src, width, got.data(), width,
                                          false));
        EXPECT_EQ(
            std::memcmp(want.data(), got.data(), want.size() * sizeof(float)),
            0)
            << c.c << "x" << c.h << "x" << c.w << " k " << c.kh << "x" << c.kw
            << " m " << c.m << " p0 " << p0 << " width " << width << " avx512 "
            << avx512;
      }
      exec::SetFullPanelsAvx512Enabled(true);
      ++products;
    }
  }
  EXPECT_EQ(products, 66);
  // A depth that is not channels x kernel is refused.
  const std::vector<float> w = RandomValues(8 * 9, 1);
  exec::PackedWeights packed(w.data(), 8, 9);
  std::vector<float> x(2 * 5 * 5), y(8 * 25);
  const exec::Im2ColSource two_channels = {x.data(), 2, 5, 5, 3, 3, 1,
                                           1,        1, 1, 1, 1, 5};
  EXPECT_FALSE(
      packed.MultiplyIm2Col(0, 8, two_channels, 25, y.data(), 25, false));
}

// The cache holds at most 64 row ranges (and twice the kernel's bytes);
// past that Multiply declines and the caller multiplies with Eigen.
TEST(PackedWeightsTest, CacheIsBounded) {
  const std::vector<float> w = RandomValues(80 * 8, 3);
  const std::vector<float> x = RandomValues(8 * 32, 4);
  exec::PackedWeights packed(w.data(), 80, 8);
  std::vector<float> y(2 * 32);
  for (int64_t row0 = 0; row0 < 70; ++row0) {
    EXPECT_EQ(packed.Multiply(row0, 2, x.data(), 32, 32, y.data(), 32, false),
              row0 < 64)
        << row0;
  }
  // A cached range still multiplies.
  EXPECT_TRUE(packed.Multiply(3, 2, x.data(), 32, 32, y.data(), 32, false));
  EXPECT_LE(packed.packed_bytes(), 2 * 80 * 8 * 4 + (64 << 10));
}

// A Conv whose kernel is an initializer (packed once by the kernel) gives
// the bits of the same Conv with the kernel fed at run time (Eigen packing
// it in every product): pointwise, 3x3, grouped, batch 2, with and without
// bias and a pool worker.
TEST(ConvKernelTest, ConstantKernelGivesTheBitsOfAFedOne) {
  struct Case {
    int64_t n, c, m, hw, k, group;
    bool bias;
  };
  ThreadPool pool(1);
  int seed = 1000;
  for (const Case& c : std::vector<Case>{{1, 160, 960, 7, 1, 1, true},
                                         {2, 32, 16, 56, 1, 1, false},
                                         {1, 96, 24, 28, 3, 1, true},
                                         {2, 16, 32, 14, 3, 4, true},
                                         {1, 8, 130, 5, 3, 1, false}}) {
    const std::vector<float> x = RandomValues(c.n * c.c * c.hw * c.hw, ++seed);
    const std::vector<float> w =
        RandomValues(c.m * c.c / c.group * c.k * c.k, ++seed);
    const std::vector<float> b = RandomValues(c.m, ++seed);
    const int64_t pad = c.k / 2;
    std::map<std::string, Attribute> attrs = {
        {"pads", Ints({pad, pad, pad, pad})}, {"group", Int(c.group)}};
    const Tensor xt = F(x, {c.n, c.c, c.hw, c.hw});
    const Tensor wt = F(w, {c.m, c.c / c.group, c.k, c.k});
    std::vector<Tensor> fed = {xt, wt};
    if (c.bias) fed.push_back(F(b, {c.m}));
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      absl::StatusOr<Tensor> want = RunOp("Conv", fed, attrs, 17, p);
      ASSERT_TRUE(want.ok()) << want.status();
      ModelBuilder mb;
      mb.Input("x").Initializer("w", wt);
      std::vector<std::string> ins = {"x", "w"};
      if (c.bias) {
        mb.Initializer("b", F(b, {c.m}));
        ins.push_back("b");
      }
      mb.Add("Conv", ins, {"y"}, attrs).Output("y");
      ExecutorOptions options;
      options.pool = p;
      absl::StatusOr<std::unique_ptr<Executor>> e =
          Executor::Create(mb.Build(), options);
      ASSERT_TRUE(e.ok()) << e.status();
      for (int run = 0; run < 2; ++run) {
        absl::StatusOr<std::map<std::string, Tensor>> got =
            (*e)->Run({{"x", xt}});
        ASSERT_TRUE(got.ok()) << got.status();
        const Tensor& y = got->at("y");
        ASSERT_EQ(y.num_elements(), want->num_elements());
        EXPECT_EQ(
            std::memcmp(y.data<float>(), want->data<float>(), y.byte_size()), 0)
            << c.c << " -> " << c.m << " k " << c.k << " group " << c.group
            << " run " << run << (p ? " with a worker" : "");
      }
    }
  }
}

}  // namespace
}  // namespace quantd
