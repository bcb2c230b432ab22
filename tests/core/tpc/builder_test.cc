// MCT's clone_and_edit semantics for the C++ builders.
#include "core/tpc/builder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::tpc {
namespace {

using ::testing::HasSubstr;
namespace qv1 = quantd::v1;

qv1::OpQuantizationConfig Linear() {
  qv1::OpQuantizationConfig c;
  *c.mutable_default_weight_attr_config() =
      MakeAttrConfig(qv1::QUANTIZATION_METHOD_POWER_OF_TWO, 8, false, false);
  (*c.mutable_attr_weights_configs_mapping())[kKernelAttr] =
      MakeAttrConfig(qv1::QUANTIZATION_METHOD_SYMMETRIC, 8, true, true);
  (*c.mutable_attr_weights_configs_mapping())[kBiasAttr] = MakeAttrConfig(
      qv1::QUANTIZATION_METHOD_POWER_OF_TWO, kFloatBitwidth, false, false);
  c.set_activation_n_bits(8);
  c.set_simd_size(32);
  return c;
}

TEST(BuilderTest, CloneAndEditAppliesConfigAndAttributeEdits) {
  auto four =
      CloneAndEdit(Linear(), [](auto& c) { c.set_simd_size(64); },
                   {{kKernelAttr, [](auto& a) { a.set_weights_n_bits(4); }}});
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->simd_size(), 64);
  EXPECT_EQ(
      four->attr_weights_configs_mapping().at(kKernelAttr).weights_n_bits(), 4);
  // The bias and the original are untouched.
  EXPECT_EQ(four->attr_weights_configs_mapping().at(kBiasAttr).weights_n_bits(),
            32);
  EXPECT_EQ(
      Linear().attr_weights_configs_mapping().at(kKernelAttr).weights_n_bits(),
      8);
}

TEST(BuilderTest, EditingAMissingAttributeIsAnError) {
  auto r = CloneAndEdit(Linear(), nullptr,
                        {{kPosAttr, [](auto& a) { a.set_weights_n_bits(4); }}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("attribute 'pos_attr' is not in "
                        "attr_weights_configs_mapping"));
}

TEST(BuilderTest, MakeQcoWithOneConfigMakesItTheBase) {
  auto q = MakeQco({Linear()});
  EXPECT_TRUE(q.has_base_config());
  auto two = MakeQco({Linear(), Linear()});
  EXPECT_FALSE(two.has_base_config());  // MCT would reject it; ValidateTpc does
}

TEST(BuilderTest, QcoCloneAndEditChangesEveryConfigAndTheBase) {
  auto q = CloneAndEdit(MakeQco({Linear()}),
                        [](auto& c) { c.set_activation_n_bits(16); });
  EXPECT_EQ(q.quantization_configurations(0).activation_n_bits(), 16);
  EXPECT_EQ(q.base_config().activation_n_bits(), 16);
}

TEST(BuilderTest, CloneAndEditWeightAttributeWithoutNamesEditsAllMapped) {
  auto q = CloneAndEditWeightAttribute(MakeQco({Linear()}), {}, [](auto& a) {
    a.set_enable_weights_quantization(false);
  });
  ASSERT_TRUE(q.ok());
  for (const auto& [name, attr] :
       q->base_config().attr_weights_configs_mapping()) {
    EXPECT_FALSE(attr.enable_weights_quantization()) << name;
  }
  // default_weight_attr_config is not a mapped attribute (MCT's attrs=None).
  EXPECT_EQ(q->base_config().default_weight_attr_config().weights_n_bits(), 8);
  auto only_bias =
      CloneAndEditWeightAttribute(MakeQco({Linear()}), {kBiasAttr},
                                  [](auto& a) { a.set_weights_n_bits(16); });
  ASSERT_TRUE(only_bias.ok());
  EXPECT_EQ(only_bias->quantization_configurations(0)
                .attr_weights_configs_mapping()
                .at(kKernelAttr)
                .weights_n_bits(),
            8);
  EXPECT_FALSE(
      CloneAndEditWeightAttribute(MakeQco({Linear()}), {"x_attr"}, [](auto&) {
      }).ok());
}

TEST(BuilderTest, FusingNamesJoinMemberNames) {
  auto f = MakeFusing({Group({MakeOpSet("Conv"), MakeOpSet("ConvTranspose")}),
                       Single(MakeOpSet("ReLU"))});
  EXPECT_EQ(f.name(), "Conv_ConvTranspose_ReLU");
  EXPECT_EQ(f.operator_groups(0).operator_set_group().name(),
            "Conv_ConvTranspose");
}

}  // namespace
}  // namespace quantd::tpc
