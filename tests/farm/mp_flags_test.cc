// The text forms of mixed-precision targets and overrides.
#include "clients/batch/mixed_precision_flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

TEST(MixedPrecisionFlagsTest, FractionsAndAbsoluteTargets) {
  v1::MixedPrecisionConfig mp;
  ASSERT_TRUE(
      ParseMixedPrecisionTargets(
          "weights=0.6,activation=0.8,weights_bytes=1e6,bops_count=5", &mp)
          .ok());
  EXPECT_DOUBLE_EQ(mp.target_fraction().weights_memory_bytes(), 0.6);
  EXPECT_DOUBLE_EQ(mp.target_fraction().activation_memory_bytes(), 0.8);
  EXPECT_FALSE(mp.target_fraction().has_total_memory_bytes());
  EXPECT_DOUBLE_EQ(mp.target().weights_memory_bytes(), 1e6);
  EXPECT_DOUBLE_EQ(mp.target().bops(), 5);
}

TEST(MixedPrecisionFlagsTest, BadTargetsQuoteTheItem) {
  v1::MixedPrecisionConfig mp;
  absl::Status st = ParseMixedPrecisionTargets("weights=0.6,memory=3", &mp);
  EXPECT_THAT(st.message(), HasSubstr("unknown target 'memory'"));
  st = ParseMixedPrecisionTargets("weights=0", &mp);
  EXPECT_THAT(st.message(), HasSubstr("'weights=0': a fraction must be > 0"));
  st = ParseMixedPrecisionTargets("weights", &mp);
  EXPECT_THAT(st.message(), HasSubstr("'weights' is not KEY=NUMBER"));
}

TEST(MixedPrecisionFlagsTest, OverridesByTypeNameAndScope) {
  v1::MixedPrecisionConfig mp;
  ASSERT_TRUE(ParseBitWidthOverrides(
                  "type:Conv=4,name:conv_3=2,scope:head@activation=16", &mp)
                  .ok());
  ASSERT_EQ(mp.bit_width_overrides_size(), 3);
  EXPECT_EQ(mp.bit_width_overrides(0).filter().node_type(), "Conv");
  EXPECT_EQ(mp.bit_width_overrides(0).target(),
            v1::BitWidthOverride::TARGET_WEIGHTS);
  EXPECT_EQ(mp.bit_width_overrides(0).bits(), 4);
  EXPECT_EQ(mp.bit_width_overrides(1).filter().node_name(), "conv_3");
  EXPECT_EQ(mp.bit_width_overrides(1).bits(), 2);
  EXPECT_EQ(mp.bit_width_overrides(2).filter().name_scope(), "head");
  EXPECT_EQ(mp.bit_width_overrides(2).target(),
            v1::BitWidthOverride::TARGET_ACTIVATION);
  EXPECT_EQ(mp.bit_width_overrides(2).bits(), 16);
}

TEST(MixedPrecisionFlagsTest, BadOverridesQuoteTheItem) {
  v1::MixedPrecisionConfig mp;
  EXPECT_THAT(ParseBitWidthOverrides("kind:Conv=4", &mp).message(),
              HasSubstr("'kind:Conv=4': the filter must be"));
  EXPECT_THAT(ParseBitWidthOverrides("type:Conv", &mp).message(),
              HasSubstr("is not FILTER[@TARGET]=BITS"));
}

}  // namespace
}  // namespace quantd
