// Every differentiable op against central finite differences of quantd's
// own executor (fd_check.h), on small hand-built graphs.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/gradient_graph.h"
#include "gtest/gtest.h"
#include "tests/core/autodiff/fd_check.h"
#include "tests/core/executor/test_util.h"

namespace quantd::autodiff {
namespace {

using quantd::testing::F;
using quantd::testing::Float;
using quantd::testing::I64;
using quantd::testing::Int;
using quantd::testing::Ints;
using quantd::testing::ModelBuilder;
using quantd::testing::String;
using testing::FdCheck;
using testing::RandomTensor;
using testing::RunFdCheck;

FdCheck Check(const ModelBuilder& b, std::map<std::string, Tensor> feeds,
              std::vector<std::string> initializers = {}) {
  FdCheck c;
  c.model = b.Build();
  c.feeds = std::move(feeds);
  c.initializers = std::move(initializers);
  return c;
}

TEST(ConvGradientTest, PadsStridesAndBiasMatchFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({4, 3, 3, 3}, 2))
      .Initializer("b", RandomTensor({4}, 3))
      .Add("Conv", {"x", "w", "b"}, {"y"},
           {{"pads", Ints({1, 0, 2, 1})}, {"strides", Ints({2, 1})}})
      .Output("y");
  EXPECT_GT(
      RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 6, 5}, 1)}}, {"w", "b"})),
      0);
}

TEST(ConvGradientTest, DepthwiseDilatedMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({3, 1, 3, 3}, 5))
      .Add("Conv", {"x", "w"}, {"y"},
           {{"group", Int(3)},
            {"dilations", Ints({2, 1})},
            {"pads", Ints({2, 1, 2, 1})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 3, 5, 5}, 4)}}, {"w"})),
            0);
}

// Input gradient alone (the float path without im2col).
TEST(ConvGradientTest, InputOnlyStridedDilatedGroupedMatchesFiniteDiff) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({4, 2, 3, 2}, 61))
      .Add("Conv", {"x", "w"}, {"y"},
           {{"group", Int(2)},
            {"strides", Ints({2, 3})},
            {"dilations", Ints({1, 2})},
            {"pads", Ints({1, 2, 0, 1})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 4, 6, 7}, 60)}})), 0);
}

TEST(ConvGradientTest, InputOnlyDepthwiseMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({3, 1, 3, 3}, 63))
      .Add("Conv", {"x", "w"}, {"y"},
           {{"group", Int(3)}, {"pads", Ints({1, 1, 1, 1})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 3, 4, 5}, 62)}})), 0);
}

TEST(ConvGradientTest, InputOnlyPointwiseMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({5, 3, 1, 1}, 65))
      .Add("Conv", {"x", "w"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 3, 4}, 64)}})), 0);
}

TEST(ConvGradientTest, Grouped1dMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({4, 2, 3}, 7))
      .Add("Conv", {"x", "w"}, {"y"},
           {{"group", Int(2)}, {"strides", Ints({2})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 4, 9}, 6)}}, {"w"})),
            0);
}

TEST(ConvGradientTest, AutoPadSameUpperMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({2, 2, 2, 2}, 9))
      .Add("Conv", {"x", "w"}, {"y"},
           {{"auto_pad", String("SAME_UPPER")}, {"strides", Ints({2, 2})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 2, 5, 4}, 8)}}, {"w"})),
            0);
}

// A Conv is linear in its input and its weights, so a wide step gives
// finite differences exact but for float rounding: the check can be a
// hundred times tighter than the harness's default (which a gradient 1%
// off passes).
FdCheck LinearCheck(const ModelBuilder& b, std::map<std::string, Tensor> feeds,
                    std::vector<std::string> initializers) {
  FdCheck c = Check(b, std::move(feeds), std::move(initializers));
  c.h = 0.25;
  c.atol = 1e-4;
  c.rtol = 1e-4;
  c.max_elements = 64;
  return c;
}

// Three spatial axes (grad_window_nd.cc): groups, per-axis strides,
// dilations and pads, and bias.
TEST(ConvGradientTest, Volumetric3dMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({4, 2, 2, 3, 2}, 71))
      .Initializer("b", RandomTensor({4}, 72))
      .Add("Conv", {"x", "w", "b"}, {"y"},
           {{"group", Int(2)},
            {"strides", Ints({2, 1, 1})},
            {"dilations", Ints({1, 1, 2})},
            {"pads", Ints({1, 0, 1, 0, 1, 0})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(LinearCheck(
                b, {{"x", RandomTensor({2, 4, 4, 5, 4}, 70)}}, {"w", "b"})),
            0);
}

TEST(ConvGradientTest, Volumetric3dAutoPadSameUpperMatchesFiniteDiff) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("w", RandomTensor({3, 2, 3, 3, 3}, 74))
      .Add("Conv", {"x", "w"}, {"y"},
           {{"auto_pad", String("SAME_UPPER")}, {"strides", Ints({2, 2, 1})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(LinearCheck(
                b, {{"x", RandomTensor({1, 2, 5, 4, 3}, 73)}}, {"w"})),
            0);
}

TEST(PoolGradientTest, Volumetric3dMaxAndAveragePoolMatchFiniteDiff) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (int include_pad : {0, 1}) {
      SCOPED_TRACE(absl::StrCat(op, " count_include_pad ", include_pad));
      ModelBuilder b(11);
      b.Input("x")
          .Add(op, {"x"}, {"y"},
               {{"kernel_shape", Ints({2, 3, 2})},
                {"strides", Ints({2, 1, 2})},
                {"pads", Ints({0, 1, 1, 1, 1, 0})},
                {"count_include_pad", Int(include_pad)}})
          .Output("y");
      EXPECT_GT(
          RunFdCheck(Check(b, {{"x", RandomTensor({2, 2, 4, 4, 5}, 75)}})), 0);
    }
  }
}

TEST(BatchNormGradientTest, EveryInputMatchesFiniteDifferences) {
  ModelBuilder b(9);
  b.Input("x")
      .Initializer("scale", RandomTensor({3}, 11))
      .Initializer("bias", RandomTensor({3}, 12))
      .Initializer("mean", RandomTensor({3}, 13, 0.3f))
      .Initializer("var", RandomTensor({3}, 14, 0.2f, 1.0f))
      .Add("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"},
           {{"epsilon", Float(1e-3f)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 2, 3}, 10)}},
                             {"scale", "bias", "mean", "var"})),
            0);
}

// One activation op on x (and its extra constant inputs).
void CheckActivation(const std::string& op,
                     std::map<std::string, Attribute> attrs = {},
                     std::vector<Tensor> bounds = {}, int64_t opset = 17) {
  ModelBuilder b(opset);
  std::vector<std::string> inputs = {"x"};
  for (size_t k = 0; k < bounds.size(); ++k) {
    const std::string name = absl::StrCat("bound", k);
    b.Initializer(name, bounds[k]);
    inputs.push_back(name);
  }
  b.Input("x").Add(op, inputs, {"y"}, std::move(attrs)).Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 4}, 20, 2.0f)}})), 0)
      << op;
}

TEST(ActivationGradientTest, ReluMatchesFiniteDifferences) {
  CheckActivation("Relu");
}
TEST(ActivationGradientTest, ClipWithBoundInputsMatchesFiniteDifferences) {
  CheckActivation("Clip", {}, {F({-0.5f}, {}), F({1.0f}, {})});
}
TEST(ActivationGradientTest, ClipWithBoundAttributesMatchesFiniteDifferences) {
  CheckActivation("Clip", {{"min", Float(0.0f)}, {"max", Float(0.7f)}}, {}, 9);
}
TEST(ActivationGradientTest, SigmoidMatchesFiniteDifferences) {
  CheckActivation("Sigmoid");
}
TEST(ActivationGradientTest, TanhMatchesFiniteDifferences) {
  CheckActivation("Tanh");
}
TEST(ActivationGradientTest, HardSigmoidMatchesFiniteDifferences) {
  CheckActivation("HardSigmoid", {{"alpha", Float(0.25f)}});
}
TEST(ActivationGradientTest, HardSwishMatchesFiniteDifferences) {
  CheckActivation("HardSwish");
}
TEST(ActivationGradientTest, LeakyReluMatchesFiniteDifferences) {
  CheckActivation("LeakyRelu", {{"alpha", Float(0.1f)}});
}

TEST(ActivationGradientTest, SwishAsMulBySigmoidMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Add("Sigmoid", {"x"}, {"s"})
      .Add("Mul", {"x", "s"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 5}, 21, 2.0f)}})), 0);
}

TEST(PoolGradientTest, MaxPoolWithPadsMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Add("MaxPool", {"x"}, {"y"},
           {{"kernel_shape", Ints({3, 2})},
            {"strides", Ints({2, 2})},
            {"pads", Ints({1, 0, 1, 1})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 2, 5, 5}, 22)}})), 0);
}

TEST(PoolGradientTest, AveragePoolExcludingPadsMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Add("AveragePool", {"x"}, {"y"},
           {{"kernel_shape", Ints({3, 3})},
            {"strides", Ints({2, 2})},
            {"pads", Ints({1, 1, 1, 1})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 2, 5, 6}, 23)}})), 0);
}

TEST(PoolGradientTest, AveragePoolIncludingPadsMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x")
      .Add("AveragePool", {"x"}, {"y"},
           {{"kernel_shape", Ints({2, 3})},
            {"pads", Ints({1, 1, 0, 1})},
            {"count_include_pad", Int(1)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 2, 4, 4}, 24)}})), 0);
}

TEST(PoolGradientTest, GlobalAveragePoolMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("x").Add("GlobalAveragePool", {"x"}, {"y"}).Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 3, 4}, 25)}})), 0);
}

// op(a, b) with a [2,3,4] and b broadcast from [3,1].
void CheckBinary(const std::string& op) {
  ModelBuilder b;
  b.Input("a").Input("b").Add(op, {"a", "b"}, {"y"}).Output("y");
  FdCheck c = Check(b, {{"a", RandomTensor({2, 3, 4}, 26)},
                        {"b", RandomTensor({3, 1}, 27, 0.5f, 2.0f)}});
  EXPECT_GT(RunFdCheck(c), 0) << op;
}

TEST(BinaryGradientTest, AddBroadcastMatchesFiniteDifferences) {
  CheckBinary("Add");
}
TEST(BinaryGradientTest, SubBroadcastMatchesFiniteDifferences) {
  CheckBinary("Sub");
}
TEST(BinaryGradientTest, MulBroadcastMatchesFiniteDifferences) {
  CheckBinary("Mul");
}
TEST(BinaryGradientTest, DivBroadcastMatchesFiniteDifferences) {
  CheckBinary("Div");
}

TEST(BinaryGradientTest, MulOfScalarInitializerMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("a")
      .Initializer("k", F({1.5f}, {}))
      .Add("Mul", {"k", "a"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"a", RandomTensor({2, 3}, 28)}}, {"k"})), 0);
}

TEST(ConcatGradientTest, ConcatOnChannelsMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("a")
      .Input("b")
      .Add("Concat", {"a", "b", "a"}, {"y"}, {{"axis", Int(1)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"a", RandomTensor({2, 2, 3}, 29)},
                                 {"b", RandomTensor({2, 1, 3}, 30)}})),
            0);
}

TEST(LinearGradientTest, GemmTransposedWithBroadcastBiasMatchesFiniteDiff) {
  ModelBuilder b;
  b.Input("a")
      .Initializer("w", RandomTensor({5, 4}, 31))
      .Initializer("c", RandomTensor({5}, 32))
      .Add("Gemm", {"a", "w", "c"}, {"y"},
           {{"transB", Int(1)}, {"alpha", Float(0.5f)}, {"beta", Float(2.0f)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"a", RandomTensor({3, 4}, 33)}}, {"w", "c"})),
            0);
}

TEST(LinearGradientTest, GemmTransposedAMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("a")
      .Initializer("w", RandomTensor({4, 2}, 34))
      .Add("Gemm", {"a", "w"}, {"y"}, {{"transA", Int(1)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"a", RandomTensor({4, 3}, 35)}}, {"w"})), 0);
}

TEST(LinearGradientTest, MatMul3dBy2dMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("a")
      .Initializer("w", RandomTensor({4, 3}, 36))
      .Add("MatMul", {"a", "w"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"a", RandomTensor({2, 3, 4}, 37)}}, {"w"})),
            0);
}

TEST(LinearGradientTest, BatchedMatMulMatchesFiniteDifferences) {
  ModelBuilder b;
  b.Input("a").Input("b").Add("MatMul", {"a", "b"}, {"y"}).Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"a", RandomTensor({2, 3, 4}, 38)},
                                 {"b", RandomTensor({2, 4, 2}, 39)}})),
            0);
}

TEST(LinearGradientTest, SoftmaxOpset13MatchesFiniteDifferences) {
  ModelBuilder b(13);
  b.Input("x").Add("Softmax", {"x"}, {"y"}, {{"axis", Int(1)}}).Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 4, 3}, 40)}})), 0);
}

TEST(LinearGradientTest, SoftmaxOpset9FlattensTheTail) {
  ModelBuilder b(9);
  b.Input("x").Add("Softmax", {"x"}, {"y"}, {{"axis", Int(1)}}).Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 2}, 41)}})), 0);
}

TEST(ShapeGradientTest, ReshapeFlattenTransposeChainMatchesFiniteDiff) {
  ModelBuilder b;
  b.Input("x")
      .Initializer("shape", I64({2, 6, 2}, {3}))
      .Initializer("k", RandomTensor({2, 2, 6}, 42))
      .Add("Reshape", {"x", "shape"}, {"r"})
      .Add("Transpose", {"r"}, {"t"}, {{"perm", Ints({0, 2, 1})}})
      .Add("Mul", {"t", "k"}, {"m"})
      .Add("Flatten", {"m"}, {"y"}, {{"axis", Int(1)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 4}, 43)}})), 0);
}

// LayerNorm as PaddleOCR's recogniser exports it: mean over the last axis,
// centred, squared with Pow, its mean plus eps, Sqrt, divided.
TEST(NormGradientTest, ExportedLayerNormMatchesFiniteDifferences) {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("two", F({2.0f}, {}))
      .Initializer("eps", F({1e-5f}, {}))
      .Add("ReduceMean", {"x"}, {"mu"}, {{"axes", Ints({-1})}})
      .Add("Sub", {"x", "mu"}, {"c"})
      .Add("Pow", {"c", "two"}, {"sq"})
      .Add("ReduceMean", {"sq"}, {"var"}, {{"axes", Ints({-1})}})
      .Add("Add", {"var", "eps"}, {"ve"})
      .Add("Sqrt", {"ve"}, {"sd"})
      .Add("Div", {"c", "sd"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 5}, 44)}})), 0);
}

TEST(NormGradientTest, ReduceMeanOverAllAxesWithoutKeepdims) {
  ModelBuilder b(13);
  b.Input("x")
      .Add("ReduceMean", {"x"}, {"y"}, {{"keepdims", Int(0)}})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3}, 45)}})), 0);
}

TEST(NormGradientTest, PowWithANonIntegerExponent) {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("p", F({1.5f}, {}))
      .Add("Pow", {"x", "p"}, {"y"})
      .Output("y");
  Tensor x = RandomTensor({2, 4}, 46);
  for (int64_t i = 0; i < x.num_elements(); ++i) {  // positive bases
    x.mutable_data<float>()[i] = std::abs(x.data<float>()[i]) + 0.5f;
  }
  EXPECT_GT(RunFdCheck(Check(b, {{"x", x}})), 0);
}

TEST(ShapeGradientTest, SliceWithNegativeStartsAndStepsMatchesFiniteDiff) {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("starts", I64({-1, 1}, {2}))
      .Initializer("ends", I64({-100, 4}, {2}))
      .Initializer("axes", I64({2, 1}, {2}))
      .Initializer("steps", I64({-2, 2}, {2}))
      .Add("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"})
      .Add("Tanh", {"s"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 5, 5}, 47)}})), 0);
}

TEST(ShapeGradientTest, SliceWithAttributesBeforeOpset10MatchesFiniteDiff) {
  ModelBuilder b(9);
  b.Input("x")
      .Add("Slice", {"x"}, {"s"},
           {{"starts", Ints({1, -3})},
            {"ends", Ints({3, 1000})},
            {"axes", Ints({1, -1})}})
      .Add("Tanh", {"s"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 4, 5}, 48)}})), 0);
}

// Constant pads (negative ones crop), then edge / reflect / wrap, whose
// border outputs add into the input elements they copy.
TEST(ShapeGradientTest, PadInEveryModeMatchesFiniteDiff) {
  for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
    SCOPED_TRACE(mode);
    ModelBuilder b(13);
    const bool constant = std::string(mode) == "constant";
    b.Input("x")
        .Initializer("pads",
                     I64(constant ? std::vector<int64_t>{0, 1, -1, 0, 2, 1}
                                  : std::vector<int64_t>{0, 2, 1, 0, 1, 3},
                         {6}))
        .Add("Pad", {"x", "pads"}, {"p"}, {{"mode", String(mode)}})
        .Add("Tanh", {"p"}, {"y"})
        .Output("y");
    EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 4}, 49)}})), 0);
  }
}

// Nearest Resize up (ppocr_det's FPN: asymmetric, floor) and down (a
// sampled copy), by scales and by sizes: each input element gets the
// gradients of the outputs that copy it.
TEST(ResampleGradientTest, NearestResizeMatchesFiniteDiff) {
  struct Case {
    const char* transform;
    const char* nearest;
    std::vector<float> scales;
  };
  for (const Case& c :
       {Case{"asymmetric", "floor", {1, 1, 2, 2}},
        Case{"half_pixel", "round_prefer_floor", {1, 1, 1.5f, 0.5f}},
        Case{"align_corners", "ceil", {1, 1, 0.75f, 3}}}) {
    SCOPED_TRACE(c.transform);
    ModelBuilder b(13);
    b.Input("x")
        .Initializer("roi", F({}, {0}))
        .Initializer("scales", F(c.scales, {4}))
        .Add("Resize", {"x", "roi", "scales"}, {"r"},
             {{"mode", String("nearest")},
              {"coordinate_transformation_mode", String(c.transform)},
              {"nearest_mode", String(c.nearest)}})
        .Add("Tanh", {"r"}, {"y"})
        .Output("y");
    EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 2, 4, 4}, 60)}})), 0);
  }
}

// Linear and cubic Resize up and down (FPN-style bilinear upsampling,
// align_corners, a cubic downsample with exclude_outside, a crop whose
// extrapolated outputs read nothing), by scales and by sizes: each input
// element gets every output's gradient times its interpolation weight.
TEST(ResampleGradientTest, LinearAndCubicResizeMatchFiniteDiff) {
  struct Case {
    const char* mode;
    const char* transform;
    std::vector<float> scales;   // empty: by sizes
    std::vector<int64_t> sizes;  // with scales empty
    std::vector<float> roi;
    bool exclude_outside;
  };
  for (const Case& c :
       {Case{"linear", "half_pixel", {1, 1, 2, 2}, {}, {}, false},
        Case{"linear", "align_corners", {}, {1, 2, 7, 3}, {}, false},
        Case{"linear", "pytorch_half_pixel", {1, 1, 0.5f, 1.5f}, {}, {}, false},
        Case{"cubic", "half_pixel", {1, 1, 0.75f, 1.25f}, {}, {}, true},
        Case{"cubic", "asymmetric", {1, 1, 2, 1}, {}, {}, false},
        Case{"linear",
             "tf_crop_and_resize",
             {},
             {1, 2, 3, 5},
             {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f},
             false}}) {
    SCOPED_TRACE(absl::StrCat(c.mode, " ", c.transform));
    ModelBuilder b(13);
    std::vector<std::string> inputs = {"x", "roi", "scales"};
    b.Input("x").Initializer("roi",
                             F(c.roi, {static_cast<int64_t>(c.roi.size())}));
    if (c.scales.empty()) {
      b.Initializer("scales", F({}, {0}))
          .Initializer("sizes", I64(c.sizes, {4}));
      inputs.push_back("sizes");
    } else {
      b.Initializer("scales", F(c.scales, {4}));
    }
    b.Add("Resize", inputs, {"r"},
          {{"mode", String(c.mode)},
           {"coordinate_transformation_mode", String(c.transform)},
           {"exclude_outside", Int(c.exclude_outside ? 1 : 0)},
           {"extrapolation_value", Float(0.25f)}})
        .Add("Tanh", {"r"}, {"y"})
        .Output("y");
    EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({1, 2, 4, 4}, 61)}})), 0);
  }
}

// ppocr_det's head (kernel 2, stride 2), then pads, dilations, groups and
// an output padding: the input gradient is the adjoint Conv; the weight
// and bias gradients too (HMSE's Hessian scores of a ConvTranspose kernel).
TEST(ResampleGradientTest, ConvTransposeMatchesFiniteDiff) {
  {
    ModelBuilder b(13);
    b.Input("x")
        .Initializer("w", RandomTensor({3, 2, 2, 2}, 63))
        .Add("ConvTranspose", {"x", "w"}, {"y"},
             {{"strides", Ints({2, 2})}, {"kernel_shape", Ints({2, 2})}})
        .Output("y");
    EXPECT_GT(
        RunFdCheck(Check(b, {{"x", RandomTensor({1, 3, 3, 4}, 64)}}, {"w"})),
        0);
  }
  {  // 1-D
    ModelBuilder b(13);
    b.Input("x")
        .Initializer("w", RandomTensor({2, 3, 3}, 68))
        .Initializer("bias", RandomTensor({3}, 69))
        .Add("ConvTranspose", {"x", "w", "bias"}, {"y"},
             {{"strides", Ints({2})}, {"pads", Ints({1, 0})}})
        .Output("y");
    EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 2, 5}, 70)}},
                               {"w", "bias"})),
              0);
  }
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({4, 1, 3, 3}, 65))
      .Initializer("bias", RandomTensor({2}, 66))
      .Add("ConvTranspose", {"x", "w", "bias"}, {"t"},
           {{"strides", Ints({2, 1})},
            {"pads", Ints({1, 0, 0, 1})},
            {"dilations", Ints({1, 2})},
            {"group", Int(2)},
            {"output_padding", Ints({1, 0})}})
      .Add("Tanh", {"t"}, {"y"})
      .Output("y");
  EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 4, 3, 3}, 67)}},
                             {"w", "bias"})),
            0);
}

// Three spatial axes: the input gradient is the executor's 3-D adjoint
// Conv, the weight gradient that Conv's N-d backward (grad_window_nd.cc);
// strides, pads, dilations, groups, an output padding and the bias. Linear
// in x, w and the bias: the tight check.
TEST(ResampleGradientTest, Volumetric3dConvTransposeMatchesFiniteDiff) {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({4, 1, 2, 3, 2}, 101))
      .Initializer("bias", RandomTensor({2}, 102))
      .Add("ConvTranspose", {"x", "w", "bias"}, {"y"},
           {{"strides", Ints({2, 1, 2})},
            {"pads", Ints({1, 0, 0, 0, 1, 1})},
            {"dilations", Ints({1, 2, 1})},
            {"group", Int(2)},
            {"output_padding", Ints({1, 0, 0})}})
      .Output("y");
  EXPECT_GT(RunFdCheck(LinearCheck(
                b, {{"x", RandomTensor({2, 4, 3, 2, 3}, 103)}}, {"w", "bias"})),
            0);
}

// The padding the kernel resolves: SAME_UPPER and SAME_LOWER with an odd
// total (the crop falls on either side), an output_shape past the
// un-cropped result (bias alone at the edges: dy is cropped before the
// adjoint Conv), an output padding wider than the end pad, and pads past
// the whole result (the output is the bias alone: x and w get zeros).
TEST(ResampleGradientTest, ConvTransposeAutoPadAndOutputShapeMatchFiniteDiff) {
  const std::vector<std::map<std::string, Attribute>> cases = {
      {{"strides", Ints({2, 2})}, {"auto_pad", String("SAME_UPPER")}},
      {{"strides", Ints({2, 1})}, {"auto_pad", String("SAME_LOWER")}},
      {{"strides", Ints({2, 2})}, {"output_shape", Ints({9, 12})}},
      {{"strides", Ints({1, 2})},
       {"output_shape", Ints({3, 6})},
       {"auto_pad", String("SAME_LOWER")}},
      {{"strides", Ints({3, 3})}, {"output_padding", Ints({2, 1})}},
      {{"pads", Ints({6, 0, 0, 0})}, {"output_padding", Ints({2, 0})}},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(c);
    ModelBuilder b(13);
    b.Input("x")
        .Initializer("w", RandomTensor({3, 2, 3, 2}, 71 + c))
        .Initializer("bias", RandomTensor({2}, 81 + c))
        .Add("ConvTranspose", {"x", "w", "bias"}, {"t"}, cases[c])
        .Add("Tanh", {"t"}, {"y"})
        .Output("y");
    EXPECT_GT(RunFdCheck(Check(b, {{"x", RandomTensor({2, 3, 3, 4}, 91 + c)}},
                               {"w", "bias"})),
              0);
  }
}

}  // namespace
}  // namespace quantd::autodiff
