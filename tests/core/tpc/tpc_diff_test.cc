// `quantctl tpc diff` logic: the differences between IMX500 1.0 and 4.0 are
// those mct-reference §4 and fixtures/mct-tpc/README.md describe.
#include "core/tpc/tpc_diff.h"

#include <algorithm>
#include <string>

#include "core/tpc/builtins.h"
#include "core/tpc/tpc_summary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::tpc {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const std::vector<std::string>* Changed(const TpcDiff& d,
                                        const std::string& name) {
  for (const auto& [n, lines] : d.changed_op_sets) {
    if (n == name) return &lines;
  }
  return nullptr;
}

class Imx500V1ToV4Test : public ::testing::Test {
 protected:
  quantd::v1::TargetPlatformCapabilities v1_ = Imx500Tpc("1.0");
  quantd::v1::TargetPlatformCapabilities v4_ = Imx500Tpc("4.0");
  TpcDiff diff_ = DiffTpcs(v1_, v4_);
};

TEST_F(Imx500V1ToV4Test, MetadataDiffers) {
  // imx500.json: minor 1, add_metadata false; imx500_v4.json: 4, true.
  EXPECT_THAT(diff_.metadata,
              UnorderedElementsAre("tpc_minor_version: 1 -> 4",
                                   "add_metadata: false -> true"));
  EXPECT_THAT(diff_.default_qco, IsEmpty());
}

TEST_F(Imx500V1ToV4Test, AddsTheEightOpSetsOfV4) {
  // fixtures README: v4 adds BatchNorm, Concatenate, StridedSlice, Gelu,
  // HardSigmoid, Min, Max and Expend.
  EXPECT_THAT(
      diff_.added_op_sets,
      UnorderedElementsAre("BatchNorm", "Concatenate", "StridedSlice", "Gelu",
                           "HardSigmoid", "Min", "Max", "Expend"));
  EXPECT_THAT(diff_.removed_op_sets, IsEmpty());
}

TEST_F(Imx500V1ToV4Test, WeightOpSetsGain16BitActivationCandidates) {
  // 8/4/2-bit kernels x {8, 16-bit signed} activations: 3 -> 6 candidates.
  const auto* conv = Changed(diff_, "Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_THAT(*conv, Contains("configurations: 3 -> 6"));
  EXPECT_THAT(*conv, Contains(HasSubstr("+ [3] act POT 16b in[8] signed")));
}

TEST_F(Imx500V1ToV4Test, ShapeOpsBecomeQuantizationPreserving) {
  const auto* reshape = Changed(diff_, "Reshape");
  ASSERT_NE(reshape, nullptr);
  EXPECT_THAT(*reshape, Contains("[0].quantization_preserving: false -> true"));
  EXPECT_THAT(
      *reshape,
      Contains("[0].supported_input_activation_n_bits: [8] -> [8, 16]"));
  const auto* gather = Changed(diff_, "Gather");
  ASSERT_NE(gather, nullptr);
  EXPECT_THAT(*gather, Contains("[0].default_weight_attr_config.enable_weights_"
                                "quantization: false -> true"));
}

TEST_F(Imx500V1ToV4Test, StackIsQuantizedWith16BitOption) {
  const auto* stack = Changed(diff_, "Stack");
  ASSERT_NE(stack, nullptr);
  EXPECT_THAT(*stack, Contains("configurations: 1 -> 2"));
  EXPECT_THAT(*stack, Contains("[0].activation_n_bits: 8 -> 16"));
  EXPECT_THAT(*stack, Contains("[0].signedness: AUTO -> SIGNED"));
  // v1's single config was the base; v4's base is the 8-bit option [1].
  EXPECT_THAT(*stack, Contains("base_config: [0] -> [1]"));
}

TEST_F(Imx500V1ToV4Test, ActivationsGetOwn16BitOptions) {
  const auto* relu = Changed(diff_, "ReLU");
  ASSERT_NE(relu, nullptr);
  EXPECT_THAT(*relu, Contains("qc_options: default_qco -> own"));
  EXPECT_THAT(*relu, Contains("configurations: 1 -> 2"));
}

TEST_F(Imx500V1ToV4Test, UnchangedNoQuantizationSetsAreNotListed) {
  // Size, Equal, ArgMax, TopK, CombinedNMS, FakeQuant, SSDPostProcess keep
  // v1's no-quantization config.
  for (const char* n : {"Size", "Equal", "ArgMax", "TopK", "FakeQuant",
                        "CombinedNonMaxSuppression", "SSDPostProcess"}) {
    EXPECT_EQ(Changed(diff_, n), nullptr) << n;
  }
}

TEST_F(Imx500V1ToV4Test, FusingGainsGeluAndHardSigmoid) {
  ASSERT_EQ(diff_.fusing.size(), 2u);
  EXPECT_THAT(diff_.fusing[0], HasSubstr("group 2: +Gelu +HardSigmoid"));
  EXPECT_THAT(diff_.fusing[1], HasSubstr("group 2: +Tanh +Gelu +HardSigmoid"));
}

TEST_F(Imx500V1ToV4Test, RenderedReportHasEverySection) {
  const std::string text =
      RenderTpcDiff(diff_, "imx500@1.0", "imx500@4.0", v1_, v4_);
  EXPECT_THAT(text, HasSubstr("--- imx500@1.0\n+++ imx500@4.0\n"));
  EXPECT_THAT(text, HasSubstr("operator sets: 40 -> 48 (8 added, 0 removed"));
  EXPECT_THAT(text, HasSubstr("  + Expend\n"));
  EXPECT_THAT(text, HasSubstr("  ~ Conv\n      configurations: 3 -> 6\n"));
  EXPECT_THAT(text, HasSubstr("fusing patterns: 3 -> 3"));
}

TEST(TpcDiffTest, IdenticalTpcsHaveNoDifferences) {
  TpcDiff d = DiffTpcs(Imx500Tpc("3.0"), Imx500Tpc("3.0"));
  EXPECT_TRUE(d.empty());
  EXPECT_THAT(RenderTpcDiff(d, "a", "b", Imx500Tpc("3.0"), Imx500Tpc("3.0")),
              HasSubstr("no differences"));
}

TEST(TpcDiffTest, LutVariantDiffersOnlyInLowBitKernelMethod) {
  TpcDiff d = DiffTpcs(Imx500Tpc("2.0"), Imx500Tpc("2.0_lut"));
  EXPECT_THAT(d.metadata, UnorderedElementsAre(
                              "name: \"imx500_tpc\" -> \"imx500_lut_tpc\""));
  ASSERT_EQ(d.changed_op_sets.size(), 4u);  // Conv, ConvT, DW, FC
  EXPECT_THAT(d.changed_op_sets[0].second,
              Contains("[1].attr_weights_configs_mapping[kernel_attr]."
                       "weights_quantization_method: SYMMETRIC -> "
                       "LUT_SYM_QUANTIZER"));
}

TEST(TpcDiffTest, Imx500_4_1RestrictsSigmoidTo8Bit) {
  TpcDiff d = DiffTpcs(Imx500Tpc("4.0"), Imx500Tpc("4.1"));
  EXPECT_THAT(d.metadata, UnorderedElementsAre("tpc_patch_version: 0 -> 1"));
  ASSERT_EQ(d.changed_op_sets.size(), 1u);
  EXPECT_EQ(d.changed_op_sets[0].first, "Sigmoid");
  EXPECT_THAT(d.changed_op_sets[0].second, Contains("configurations: 2 -> 1"));
}

TEST(TpcDiffTest, QnnpackW8AssignsLinearConfig) {
  TpcDiff d = DiffTpcs(QnnpackTpc(false), QnnpackTpc(true));
  std::vector<std::string> names;
  for (const auto& [n, lines] : d.changed_op_sets) names.push_back(n);
  EXPECT_THAT(names, UnorderedElementsAre("Conv", "DepthwiseConv2D",
                                          "ConvTranspose", "FullyConnected"));
}

TEST(TpcSummaryTest, ShowsOpSetsConfigsAndFusing) {
  const std::string s = TpcSummary(Imx500Tpc("1.0"));
  EXPECT_THAT(s, HasSubstr("name: imx500_tpc   version: 1.0"));
  EXPECT_THAT(s, HasSubstr("operator sets (40"));
  EXPECT_THAT(s, HasSubstr("  Conv: 3 configurations\n    * act POT 8b in[8] "
                           "simd32 | kernel SYM 8b per-channel | bias float | "
                           "other weights float\n"));
  EXPECT_THAT(s, HasSubstr("  ReLU: default_qco\n"));
  EXPECT_THAT(s, HasSubstr("[Add|Sub|Mul|Div] -> [ReLU|ReLU6|LeakyReLU|"
                           "HardTanh]"));
}

}  // namespace
}  // namespace quantd::tpc
