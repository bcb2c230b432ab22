// Layer filters and attaching TPCs to ONNX nodes (MCT's
// LayerFilterParams / AttributeFilter / fetch_qc_options_for_node).
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/tpc/builder.h"
#include "core/tpc/builtins.h"
#include "core/tpc/framework_info.h"
#include "core/tpc/layer_filter.h"
#include "core/tpc/onnx_opset_mapping.h"
#include "core/tpc/operator_set_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::tpc {
namespace {

using quantd::v1::TargetPlatformCapabilities;
using ::testing::HasSubstr;

OpView Node(const std::string& op_type,
            std::map<std::string, AttrValue> attrs = {}) {
  OpView op;
  op.name = "n0";
  op.op_type = op_type;
  op.attributes = std::move(attrs);
  return op;
}

OpInput Const(std::vector<int64_t> shape, std::optional<double> value = {}) {
  OpInput in;
  in.is_constant = true;
  in.shape = std::move(shape);
  in.scalar_value = value;
  return in;
}

OpInput Dynamic() { return OpInput{}; }

// ---- each filter op ------------------------------------------------------

TEST(AttributeFilterTest, EqAndNotEq) {
  OpView op = Node("Conv", {{"group", int64_t{4}}});
  EXPECT_TRUE(Matches(Eq("group", Int(4)), op));
  EXPECT_TRUE(Matches(Eq("group", Float(4.0)), op));  // numbers as doubles
  EXPECT_FALSE(Matches(Eq("group", Int(3)), op));
  EXPECT_TRUE(Matches(NotEq("group", Int(3)), op));
  EXPECT_FALSE(Matches(NotEq("group", Int(4)), op));
}

TEST(AttributeFilterTest, OrderingComparisons) {
  OpView op = Node("LeakyRelu", {{"alpha", 0.1}});
  EXPECT_TRUE(Matches(Greater("alpha", Float(0.05)), op));
  EXPECT_FALSE(Matches(Greater("alpha", Float(0.1)), op));
  EXPECT_TRUE(Matches(GreaterEq("alpha", Float(0.1)), op));
  EXPECT_TRUE(Matches(Smaller("alpha", Float(0.2)), op));
  EXPECT_FALSE(Matches(Smaller("alpha", Float(0.1)), op));
  EXPECT_TRUE(Matches(SmallerEq("alpha", Float(0.1)), op));
}

TEST(AttributeFilterTest, ContainsOnListsAndStrings) {
  OpView op = Node("Conv", {{"kernel_shape", std::vector<int64_t>{3, 5}},
                            {"auto_pad", std::string("SAME_UPPER")}});
  EXPECT_TRUE(Matches(Contains("kernel_shape", Int(5)), op));
  EXPECT_FALSE(Matches(Contains("kernel_shape", Int(7)), op));
  EXPECT_TRUE(Matches(Contains("auto_pad", Str("SAME")), op));
  EXPECT_FALSE(Matches(Contains("auto_pad", Str("VALID")), op));
}

TEST(AttributeFilterTest, ListsAndStringsCompareForEquality) {
  OpView op = Node("Conv", {{"strides", std::vector<int64_t>{2, 2}},
                            {"auto_pad", std::string("VALID")}});
  EXPECT_TRUE(Matches(Eq("strides", Ints({2, 2})), op));
  EXPECT_FALSE(Matches(Eq("strides", Ints({1, 1})), op));
  EXPECT_TRUE(Matches(Eq("auto_pad", Str("VALID")), op));
}

TEST(AttributeFilterTest, MissingAttributeNeverMatches) {
  OpView op = Node("Relu");
  EXPECT_FALSE(Matches(Eq("alpha", Int(1)), op));
  EXPECT_FALSE(Matches(NotEq("alpha", Int(1)), op));  // MCT: attr must exist
}

TEST(AttributeFilterTest, AndOrCombinations) {
  OpView op = Node("Conv", {{"group", int64_t{8}}});
  op.in_channels = 8;
  EXPECT_TRUE(Matches(
      And({Eq("group", Ref("in_channels")), Greater("group", Int(1))}), op));
  EXPECT_FALSE(Matches(
      And({Eq("group", Ref("in_channels")), Greater("group", Int(8))}), op));
  EXPECT_TRUE(Matches(Or({Eq("group", Int(1)), Eq("group", Int(8))}), op));
  EXPECT_FALSE(Matches(Or({Eq("group", Int(1)), Eq("group", Int(2))}), op));
  // Nested: (group == 1 || (group == 8 && in_channels == 8))
  EXPECT_TRUE(
      Matches(Or({Eq("group", Int(1)),
                  And({Eq("group", Int(8)), Eq("in_channels", Int(8))})}),
              op));
}

TEST(AttributeFilterTest, OnnxDefaultsAndPseudoAttributes) {
  OpView conv = Node("Conv");  // group unset -> ONNX default 1
  EXPECT_TRUE(Matches(Eq("group", Int(1)), conv));
  OpView clip = Node("Clip");
  clip.inputs = {Dynamic(), Const({}, 0.0), Const({}, 6.0)};
  EXPECT_TRUE(Matches(Eq("input2.value", Float(6)), clip));
  EXPECT_TRUE(Matches(Eq("input1.is_const", Int(1)), clip));
  EXPECT_TRUE(Matches(Eq("input0.is_const", Int(0)), clip));
  EXPECT_TRUE(Matches(Eq("num_inputs", Int(3)), clip));
  EXPECT_FALSE(Matches(Eq("input3.is_const", Int(0)), clip));  // no input 3
}

TEST(LayerFilterTest, TypeMustMatchAndAllConditions) {
  OpView op = Node("Conv", {{"group", int64_t{2}}});
  EXPECT_TRUE(Matches(Filter("Conv"), op));
  EXPECT_FALSE(Matches(Filter("ConvTranspose"), op));
  EXPECT_TRUE(Matches(Filter("Conv", {Eq("group", Int(2))}), op));
  EXPECT_FALSE(
      Matches(Filter("Conv", {Eq("group", Int(2)), Eq("group", Int(3))}), op));
  EXPECT_EQ(ToString(Filter("Conv", {Eq("group", Ref("in_channels"))})),
            "Conv[group == $in_channels]");
}

// ---- attaching -----------------------------------------------------------

std::shared_ptr<const TargetPlatformCapabilities> Shared(
    TargetPlatformCapabilities t) {
  return std::make_shared<const TargetPlatformCapabilities>(std::move(t));
}

OnnxTpcAttachment AttachImx500(const std::string& version) {
  auto a = OnnxTpcAttachment::Create(Shared(Imx500Tpc(version)));
  EXPECT_TRUE(a.ok()) << a.status();
  return *std::move(a);
}

std::string OpSetOf(const OnnxTpcAttachment& a, const OpView& op) {
  auto r = a.Attach(op);
  return r.ok() ? r->op_set : "error: " + std::string(r.status().message());
}

TEST(OnnxAttachTest, DefaultMappingCoversEveryOperatorSetName) {
  for (auto name : kOperatorSetNamesV1) {
    bool found = false;
    for (const auto& e : DefaultOnnxOpsetMapping().entries()) {
      found = found || e.opset() == name;
    }
    EXPECT_TRUE(found) << name;
  }
  for (auto name : kOperatorSetNamesV2Additions) {
    bool found = false;
    for (const auto& e : DefaultOnnxOpsetMapping().entries()) {
      found = found || e.opset() == name;
    }
    EXPECT_TRUE(found) << name;
  }
}

TEST(OnnxAttachTest, EveryBuiltinAttaches) {
  for (const auto& b : BuiltinTpcs()) {
    EXPECT_TRUE(OnnxTpcAttachment::Create(Shared(b.tpc)).ok())
        << b.name << "@" << b.version;
  }
}

TEST(OnnxAttachTest, DepthwiseFilterBeatsConvType) {
  OnnxTpcAttachment a = AttachImx500("4.0");
  OpView dw = Node("Conv", {{"group", int64_t{32}}});
  dw.in_channels = 32;
  EXPECT_EQ(OpSetOf(a, dw), "DepthwiseConv2D");
  OpView grouped = Node("Conv", {{"group", int64_t{2}}});
  grouped.in_channels = 32;
  EXPECT_EQ(OpSetOf(a, grouped), "Conv");
  EXPECT_EQ(OpSetOf(a, Node("Conv")), "Conv");
}

TEST(OnnxAttachTest, DepthwiseFallsBackToConvWhenTpcHasNoDepthwiseSet) {
  // TFLite's TPC has Conv but no DepthwiseConv2D.
  auto a = OnnxTpcAttachment::Create(Shared(TfliteTpc()));
  ASSERT_TRUE(a.ok());
  OpView dw = Node("Conv", {{"group", int64_t{32}}});
  dw.in_channels = 32;
  EXPECT_EQ(OpSetOf(*a, dw), "Conv");
}

TEST(OnnxAttachTest, ClipBecomesReLU6OrHardTanh) {
  OnnxTpcAttachment a = AttachImx500("1.0");
  OpView relu6 = Node("Clip");  // opset >= 11: bounds are inputs
  relu6.inputs = {Dynamic(), Const({}, 0.0), Const({}, 6.0)};
  EXPECT_EQ(OpSetOf(a, relu6), "ReLU6");
  OpView relu6_attrs = Node("Clip", {{"min", 0.0}, {"max", 6.0}});  // opset 6
  EXPECT_EQ(OpSetOf(a, relu6_attrs), "ReLU6");
  OpView hardtanh = Node("Clip");
  hardtanh.inputs = {Dynamic(), Const({}, 0.0), Const({}, 1.0)};
  EXPECT_EQ(OpSetOf(a, hardtanh), "HardTanh");
  OpView other = Node("Clip");
  other.inputs = {Dynamic(), Const({}, -1.0), Const({}, 1.0)};
  EXPECT_EQ(OpSetOf(a, other), "");
}

TEST(OnnxAttachTest, GemmAndMatMulWithConstantWeightAreFullyConnected) {
  OnnxTpcAttachment a = AttachImx500("1.0");
  OpView gemm = Node("Gemm");
  gemm.inputs = {Dynamic(), Const({64, 10}), Const({10})};
  EXPECT_EQ(OpSetOf(a, gemm), "FullyConnected");
  OpView matmul = Node("MatMul");
  matmul.inputs = {Dynamic(), Const({64, 10})};
  EXPECT_EQ(OpSetOf(a, matmul), "FullyConnected");
  OpView dynamic = Node("MatMul");
  dynamic.inputs = {Dynamic(), Dynamic()};
  EXPECT_EQ(OpSetOf(a, dynamic), "");
  OpView batched = Node("MatMul");
  batched.inputs = {Dynamic(), Const({4, 64, 10})};
  EXPECT_EQ(OpSetOf(a, batched), "");
}

TEST(OnnxAttachTest, UnmatchedNodeGetsDefaultQco) {
  OnnxTpcAttachment a = AttachImx500("1.0");
  auto r = a.Attach(Node("Softmax"));  // imx500 1.0 has no Softmax op set
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op_set, "");
  EXPECT_EQ(r->qco, &a.tpc().default_qco());
}

TEST(OnnxAttachTest, OpSetWithoutQcOptionsUsesDefaultQco) {
  OnnxTpcAttachment a = AttachImx500("1.0");
  auto r = a.Attach(Node("Relu"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op_set, "ReLU");
  EXPECT_EQ(r->qco, &a.tpc().default_qco());
}

TEST(OnnxAttachTest, KernelAndBiasMapToOnnxInputs) {
  OnnxTpcAttachment a = AttachImx500("1.0");
  OpView conv = Node("Conv");
  conv.inputs = {Dynamic(), Const({8, 3, 3, 3}), Const({8})};
  auto r = a.Attach(conv);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attr_inputs.at(kKernelAttr), 1);
  EXPECT_EQ(r->attr_inputs.at(kBiasAttr), 2);
  const auto& base = r->qco->base_config();
  // IMX500 kernel: symmetric 8-bit per-channel; bias left in float.
  const auto& kernel = WeightConfigForInput(*r, base, 1);
  EXPECT_EQ(kernel.weights_quantization_method(),
            quantd::v1::QUANTIZATION_METHOD_SYMMETRIC);
  EXPECT_TRUE(kernel.weights_per_channel_threshold());
  EXPECT_EQ(WeightConfigForInput(*r, base, 2).weights_n_bits(), 32);
}

TEST(OnnxAttachTest, PositionalConstantsUsePosAttrOrDefault) {
  // imx500 5.0: Add's constant input is quantized 16-bit via pos_attr;
  // imx500 4.0 uses default_weight_attr_config (8-bit per-channel).
  OpView add = Node("Add");
  add.inputs = {Dynamic(), Const({1, 8, 1, 1})};
  auto v5 = AttachImx500("5.0").Attach(add);
  ASSERT_TRUE(v5.ok());
  EXPECT_EQ(
      WeightConfigForInput(*v5, v5->qco->base_config(), 1).weights_n_bits(),
      16);
  OnnxTpcAttachment a4 = AttachImx500("4.0");
  auto v4 = a4.Attach(add);
  ASSERT_TRUE(v4.ok());
  const auto& c = WeightConfigForInput(*v4, v4->qco->base_config(), 1);
  EXPECT_EQ(c.weights_n_bits(), 8);
  EXPECT_TRUE(c.weights_per_channel_threshold());
}

TEST(OnnxAttachTest, TwoOpSetsMatchingIsAnErrorNamingBoth) {
  TargetPlatformCapabilities tpc = Imx500Tpc("1.0");
  *tpc.add_operator_set() = MakeOpSet("MyGemm");
  quantd::v1::OpsetLayerMapping custom;
  auto* e = custom.add_entries();
  e->set_opset("MyGemm");
  *e->add_layers() = Filter("Gemm", {Eq("transB", Int(1))});
  auto a = OnnxTpcAttachment::Create(Shared(tpc), &custom);
  ASSERT_TRUE(a.ok()) << a.status();
  OpView gemm = Node("Gemm", {{"transB", int64_t{1}}});
  gemm.name = "fc1";
  gemm.inputs = {Dynamic(), Const({10, 64})};
  auto r = a->Attach(gemm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("node 'fc1' (Gemm) matches operator sets "
                        "\"FullyConnected\" and \"MyGemm\""));
}

TEST(OnnxAttachTest, SameLayerInTwoOpSetsIsRejectedAtCreate) {
  TargetPlatformCapabilities tpc = Imx500Tpc("1.0");
  quantd::v1::OpsetLayerMapping custom;
  auto* e = custom.add_entries();
  e->set_opset("ReLU6");
  *e->add_layers() = Filter("Relu");
  auto a = OnnxTpcAttachment::Create(Shared(tpc), &custom);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("ONNX layer Relu is mapped to two operator sets"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("\"ReLU\""));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("\"ReLU6\""));
}

TEST(OnnxAttachTest, CustomMappingOverridesDefault) {
  // Map Sigmoid's op set to HardSigmoid nodes instead (MCT's
  // custom_tpc_opset_to_layer has priority over the built-in map).
  quantd::v1::OpsetLayerMapping custom;
  auto* e = custom.add_entries();
  e->set_opset("Sigmoid");
  *e->add_layers() = Filter("HardSigmoid");
  auto a = OnnxTpcAttachment::Create(Shared(Imx500Tpc("1.0")), &custom);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(OpSetOf(*a, Node("HardSigmoid")), "Sigmoid");
  EXPECT_EQ(OpSetOf(*a, Node("Sigmoid")), "");
}

TEST(OnnxAttachTest, CustomOpSetNeedsAMapping) {
  TargetPlatformCapabilities tpc = Imx500Tpc("1.0");
  *tpc.add_operator_set() = MakeOpSet("MyNms");
  auto a = OnnxTpcAttachment::Create(Shared(tpc));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("operator set \"MyNms\" has no ONNX mapping"));
  quantd::v1::OpsetLayerMapping custom;
  auto* e = custom.add_entries();
  e->set_opset("MyNms");
  *e->add_layers() = Filter("NonMaxSuppression", {});
  (*e->mutable_attr_mapping())[kPosAttr] = "2";
  tpc.mutable_operator_set()->RemoveLast();
  *tpc.add_operator_set() = MakeOpSet("MyNms");
  // CombinedNonMaxSuppression already maps NonMaxSuppression in the default.
  auto clash = OnnxTpcAttachment::Create(Shared(tpc), &custom);
  EXPECT_FALSE(clash.ok());
}

TEST(OnnxAttachTest, MalformedCustomMappingNamesTheField) {
  quantd::v1::OpsetLayerMapping custom;
  auto* e = custom.add_entries();
  e->set_opset("Conv");
  auto* l = e->add_layers();
  l->set_op_type("Conv");
  l->add_conditions()->set_op(quantd::v1::AttributeFilter::OP_EQ);
  auto a = OnnxTpcAttachment::Create(Shared(Imx500Tpc("1.0")), &custom);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("opset_layer_mapping.entries[0] (\"Conv\").layers[0]."
                        "conditions[0].attr: empty"));
  (*e->mutable_attr_mapping())[kKernelAttr] = "x";
  e->mutable_layers(0)->clear_conditions();
  a = OnnxTpcAttachment::Create(Shared(Imx500Tpc("1.0")), &custom);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("attr_mapping[\"kernel_attr\"]: \"x\" is not an "
                        "input index"));
}

// ---- FrameworkInfo -------------------------------------------------------

TEST(FrameworkInfoTest, KernelChannelAxes) {
  const auto& fi = OnnxFrameworkInfo::Default();
  auto conv = fi.Kernel(Node("Conv"));  // W [M, C/g, kH, kW]
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->out_channel_axis, 0);
  EXPECT_EQ(conv->in_channel_axis, 1);
  auto convt = fi.Kernel(Node("ConvTranspose"));  // W [C, M/g, kH, kW]
  EXPECT_EQ(convt->out_channel_axis, 1);
  EXPECT_EQ(convt->in_channel_axis, 0);
  auto gemm = fi.Kernel(Node("Gemm"));  // B [K, N]
  EXPECT_EQ(gemm->out_channel_axis, 1);
  auto gemm_t = fi.Kernel(Node("Gemm", {{"transB", int64_t{1}}}));  // [N, K]
  EXPECT_EQ(gemm_t->out_channel_axis, 0);
  EXPECT_EQ(gemm_t->in_channel_axis, 1);
  auto matmul = fi.Kernel(Node("MatMul"));  // B [K, N]
  EXPECT_EQ(matmul->out_channel_axis, 1);
  EXPECT_FALSE(fi.Kernel(Node("Relu")));
}

TEST(FrameworkInfoTest, KnownOutputRanges) {
  const auto& fi = OnnxFrameworkInfo::Default();
  EXPECT_TRUE(fi.KnownOutputRange("Sigmoid")->bounded());
  EXPECT_EQ(*fi.KnownOutputRange("Softmax")->max, 1.0);
  EXPECT_EQ(*fi.KnownOutputRange("Tanh")->min, -1.0);
  EXPECT_FALSE(fi.KnownOutputRange("Relu")->bounded());
  EXPECT_EQ(*fi.KnownOutputRange("Gelu")->min, -0.17);
  EXPECT_FALSE(fi.KnownOutputRange("Add"));
  EXPECT_TRUE(fi.IsNoQuantizationOp("Shape"));
  EXPECT_FALSE(fi.IsNoQuantizationOp("Conv"));
  EXPECT_TRUE(fi.IsActivationOp("HardSwish"));
  EXPECT_EQ(fi.OutputChannelAxis("Conv"), 1);
  EXPECT_EQ(fi.OutputChannelAxis("Gemm"), -1);
}

TEST(FrameworkInfoTest, OverrideReplacesAndAdds) {
  OnnxFrameworkInfo fi = OnnxFrameworkInfo::Default();
  quantd::v1::FrameworkInfoOverride o;
  auto* r = o.add_activation_ranges();
  r->set_op_type("Relu");
  r->set_max(6);
  r->set_min(0);
  auto* k = o.add_kernel_ops();
  k->set_op_type("com.acme.Conv");
  k->set_weight_input(2);
  k->set_out_channel_axis(3);
  k->set_in_channel_axis(2);
  o.add_no_quantization_ops("Identity");
  ASSERT_TRUE(fi.ApplyOverride(o).ok());
  EXPECT_TRUE(fi.KnownOutputRange("Relu")->bounded());
  EXPECT_EQ(fi.Kernel(Node("com.acme.Conv"))->weight_input, 2);
  EXPECT_TRUE(fi.IsNoQuantizationOp("Identity"));
  // The shared default is untouched.
  EXPECT_FALSE(
      OnnxFrameworkInfo::Default().KnownOutputRange("Relu")->bounded());
}

TEST(FrameworkInfoTest, BadOverrideNamesTheField) {
  OnnxFrameworkInfo fi = OnnxFrameworkInfo::Default();
  quantd::v1::FrameworkInfoOverride o;
  auto* r = o.add_activation_ranges();
  r->set_op_type("Relu");
  r->set_min(2);
  r->set_max(1);
  absl::Status s = fi.ApplyOverride(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("framework_info.activation_ranges[0] (Relu).min: 2 "
                        "is greater than max 1"));
}

TEST(FrameworkInfoTest, NanBoundNamesItsField) {
  // Was "min nan > max inf", without the field.
  OnnxFrameworkInfo fi = OnnxFrameworkInfo::Default();
  quantd::v1::FrameworkInfoOverride o;
  auto* r = o.add_activation_ranges();
  r->set_op_type("Relu");
  r->set_min(std::nan(""));
  r->set_max(std::numeric_limits<double>::infinity());
  EXPECT_THAT(std::string(fi.ApplyOverride(o).message()),
              HasSubstr("framework_info.activation_ranges[0] (Relu).min: NaN "
                        "is not a bound"));
}

TEST(FrameworkInfoTest, KernelAxesOutsideAWeightAreRejected) {
  for (const int axis : {100, -100, 5}) {
    OnnxFrameworkInfo fi = OnnxFrameworkInfo::Default();
    quantd::v1::FrameworkInfoOverride o;
    auto* k = o.add_kernel_ops();
    k->set_op_type("Conv");
    k->set_weight_input(1);
    k->set_out_channel_axis(0);
    k->set_in_channel_axis(axis);
    const absl::Status s = fi.ApplyOverride(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << axis;
    EXPECT_THAT(
        std::string(s.message()),
        HasSubstr(absl::StrCat("framework_info.kernel_ops[0] (Conv)."
                               "in_channel_axis: ",
                               axis, " is not a weight axis in [0, 4]")));
  }
}

}  // namespace
}  // namespace quantd::tpc
