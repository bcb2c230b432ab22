// One TEST per validation rule (mct-reference §3.2-3.3), each checking the
// message names the field path.
#include "core/tpc/validation.h"

#include <string>

#include "core/tpc/builder.h"
#include "core/tpc/builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::tpc {
namespace {

using quantd::v1::OpQuantizationConfig;
using quantd::v1::TargetPlatformCapabilities;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

OpQuantizationConfig Config(int act_bits) {
  OpQuantizationConfig c;
  *c.mutable_default_weight_attr_config() = MakeAttrConfig(
      quantd::v1::QUANTIZATION_METHOD_POWER_OF_TWO, 8, false, false);
  c.set_activation_n_bits(act_bits);
  c.add_supported_input_activation_n_bits(8);
  c.set_enable_activation_quantization(true);
  return c;
}

TargetPlatformCapabilities Minimal() {
  TargetPlatformCapabilities tpc;
  *tpc.mutable_default_qco() = MakeQco({Config(8)});
  tpc.set_schema_version(2);
  tpc.set_name("t");
  *tpc.add_operator_set() = MakeOpSet("Conv");
  *tpc.add_operator_set() = MakeOpSet("ReLU");
  return tpc;
}

TEST(ValidationTest, MinimalTpcIsValid) {
  EXPECT_TRUE(ValidateTpc(Minimal()).ok());
}

TEST(ValidationTest, DefaultQcoMustHaveExactlyOneConfig) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.mutable_default_qco() = MakeQco({Config(8), Config(16)}, Config(8));
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("default_qco: must contain exactly one "
                          "configuration, got 2"));
}

TEST(ValidationTest, MissingDefaultQcoIsAnError) {
  TargetPlatformCapabilities tpc = Minimal();
  tpc.clear_default_qco();
  EXPECT_THAT(TpcErrors(tpc), ElementsAre("default_qco: missing"));
}

TEST(ValidationTest, QcOptionsNeedAtLeastOneConfig) {
  TargetPlatformCapabilities tpc = Minimal();
  tpc.mutable_operator_set(0)->mutable_qc_options();
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("operator_set[0] (\"Conv\").qc_options: no "
                          "quantization_configurations (at least one is "
                          "required)"));
}

TEST(ValidationTest, SeveralConfigsWithoutBaseConfigIsAnError) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_operator_set() =
      MakeOpSet("Add", MakeQco({Config(8), Config(16), Config(4)}));
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("operator_set[2] (\"Add\").qc_options: 3 "
                          "configurations but no base_config"));
}

TEST(ValidationTest, BaseConfigMustBeOneOfTheConfigs) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.mutable_operator_set(1)->mutable_qc_options() =
      MakeQco({Config(8), Config(16)}, Config(4));
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("operator_set[1] (\"ReLU\").qc_options.base_config: "
                          "is not one of quantization_configurations"));
}

TEST(ValidationTest, OperatorSetNamesMustBeUnique) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_operator_set() = MakeOpSet("Conv");
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("operator_set[2] (\"Conv\"): duplicate operator set "
                          "name (names must be unique)"));
}

TEST(ValidationTest, EmptyOperatorSetNameIsAnError) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_operator_set() = MakeOpSet("");
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("operator_set[2] (\"\"): empty operator set name"));
}

TEST(ValidationTest, FusingNeedsAtLeastTwoGroups) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_fusing_patterns() = MakeFusing({Single(tpc.operator_set(0))});
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("fusing_patterns[0] (\"Conv\"): has 1 operator "
                          "groups; fusing needs at least 2"));
}

TEST(ValidationTest, OperatorSetGroupNeedsAtLeastOneSet) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_fusing_patterns() =
      MakeFusing({Single(tpc.operator_set(0)), Group({})});
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("fusing_patterns[0] (\"Conv_\").operator_groups[1]: "
                          "operator set group has no operator sets"));
}

TEST(ValidationTest, FusingMustReferToKnownOperatorSets) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_fusing_patterns() =
      MakeFusing({Single(tpc.operator_set(0)),
                  Group({MakeOpSet("ReLU"), MakeOpSet("Elu")})});
  EXPECT_THAT(
      TpcErrors(tpc),
      ElementsAre("fusing_patterns[0] (\"Conv_ReLU_Elu\").operator_groups[1]."
                  "operators_set[1] (\"Elu\"): refers to an operator set that "
                  "is not in operator_set"));
}

TEST(ValidationTest, ActivationBitsMustBePositive) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.mutable_operator_set(0)->mutable_qc_options() = MakeQco({Config(0)});
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("operator_set[0] (\"Conv\").qc_options."
                          "quantization_configurations[0].activation_n_bits: "
                          "must be positive, got 0"));
}

TEST(ValidationTest, WeightBitsMustBePositive) {
  TargetPlatformCapabilities tpc = Minimal();
  tpc.mutable_default_qco()
      ->mutable_quantization_configurations(0)
      ->mutable_default_weight_attr_config()
      ->set_weights_n_bits(-1);
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("default_qco.quantization_configurations[0]."
                          "default_weight_attr_config.weights_n_bits: must be "
                          "positive, got -1",
                          "default_qco.base_config: is not one of "
                          "quantization_configurations"));
}

TEST(ValidationTest, QuantizedBitsAreAtMostSixteen) {
  // Accepted, 17 kernel bits would leave the weights float silently.
  TargetPlatformCapabilities tpc = Minimal();
  OpQuantizationConfig c = Config(1000);
  *c.mutable_default_weight_attr_config() = MakeAttrConfig(
      quantd::v1::QUANTIZATION_METHOD_POWER_OF_TWO, 17, false, true);
  c.set_supported_input_activation_n_bits(0, 33);
  *tpc.mutable_operator_set(0)->mutable_qc_options() = MakeQco({c});
  EXPECT_THAT(
      TpcErrors(tpc),
      ElementsAre("operator_set[0] (\"Conv\").qc_options.quantization_"
                  "configurations[0].default_weight_attr_config."
                  "weights_n_bits: 17 is over 16 bits (quantized weights)",
                  "operator_set[0] (\"Conv\").qc_options.quantization_"
                  "configurations[0].activation_n_bits: 1000 is over 16 bits "
                  "(quantized activations)",
                  "operator_set[0] (\"Conv\").qc_options.quantization_"
                  "configurations[0].supported_input_activation_n_bits[0]: 33 "
                  "is over 32 bits"));
}

TEST(ValidationTest, FloatBitWidthIsAllowedWhereQuantizationIsOff) {
  // MCT's bias and float configs say 32 bits with quantization disabled.
  TargetPlatformCapabilities tpc = Minimal();
  OpQuantizationConfig c = Config(32);
  c.set_enable_activation_quantization(false);
  *c.mutable_default_weight_attr_config() = MakeAttrConfig(
      quantd::v1::QUANTIZATION_METHOD_POWER_OF_TWO, 32, false, false);
  *tpc.mutable_operator_set(0)->mutable_qc_options() = MakeQco({c});
  EXPECT_THAT(TpcErrors(tpc), ::testing::IsEmpty());
}

TEST(ValidationTest, SupportedInputBitsMustBeNonEmptyAndPositive) {
  TargetPlatformCapabilities tpc = Minimal();
  OpQuantizationConfig c = Config(8);
  c.clear_supported_input_activation_n_bits();
  OpQuantizationConfig d = Config(8);
  d.add_supported_input_activation_n_bits(0);
  *tpc.mutable_operator_set(0)->mutable_qc_options() = MakeQco({c, d}, c);
  EXPECT_THAT(
      TpcErrors(tpc),
      ElementsAre("operator_set[0] (\"Conv\").qc_options.quantization_"
                  "configurations[0].supported_input_activation_n_bits: must "
                  "list at least one bit width",
                  "operator_set[0] (\"Conv\").qc_options.quantization_"
                  "configurations[1].supported_input_activation_n_bits[1]: "
                  "must be positive, got 0"));
}

TEST(ValidationTest, LutBitwidthAndSimdSizeMustBePositive) {
  TargetPlatformCapabilities tpc = Minimal();
  OpQuantizationConfig c = Config(8);
  c.set_simd_size(0);
  (*c.mutable_attr_weights_configs_mapping())[kKernelAttr] = MakeAttrConfig(
      quantd::v1::QUANTIZATION_METHOD_LUT_SYM_QUANTIZER, 4, true, true, 0);
  *tpc.mutable_operator_set(0)->mutable_qc_options() = MakeQco({c});
  const auto errors = TpcErrors(tpc);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0],
            "operator_set[0] (\"Conv\").qc_options.quantization_"
            "configurations[0].attr_weights_configs_mapping[\"kernel_attr\"]."
            "lut_values_bitwidth: must be positive, got 0");
  EXPECT_EQ(errors[1],
            "operator_set[0] (\"Conv\").qc_options.quantization_"
            "configurations[0].simd_size: must be positive, got 0");
}

TEST(ValidationTest, UnknownEnumValuesAreErrors) {
  TargetPlatformCapabilities tpc = Minimal();
  auto* c = tpc.mutable_default_qco()->mutable_base_config();
  c->set_activation_quantization_method(
      static_cast<quantd::v1::QuantizationMethod>(7));
  c->set_signedness(static_cast<quantd::v1::Signedness>(5));
  *tpc.mutable_default_qco()->mutable_quantization_configurations(0) = *c;
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("default_qco.quantization_configurations[0]."
                          "activation_quantization_method: unknown "
                          "quantization method 7",
                          "default_qco.quantization_configurations[0]."
                          "signedness: unknown signedness 5"));
}

TEST(ValidationTest, PreservingAndQuantizedIsAWarningUnlessStrict) {
  TargetPlatformCapabilities tpc = Minimal();
  OpQuantizationConfig c = Config(8);
  c.set_quantization_preserving(true);
  *tpc.mutable_operator_set(1)->mutable_qc_options() = MakeQco({c});
  EXPECT_TRUE(TpcErrors(tpc).empty());
  EXPECT_THAT(TpcWarnings(tpc),
              ::testing::Contains(HasSubstr(
                  "operator_set[1] (\"ReLU\").qc_options.quantization_"
                  "configurations[0]: enable_activation_quantization and "
                  "quantization_preserving are both true")));
  EXPECT_THAT(TpcErrors(tpc, {.strict = true}),
              ::testing::Contains(HasSubstr("are both true")));
}

TEST(ValidationTest, SchemaVersionMustBeOneOrTwo) {
  TargetPlatformCapabilities tpc = Minimal();
  tpc.set_schema_version(3);
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("schema_version: must be 1 or 2, got 3"));
}

TEST(ValidationTest, V2FieldsAreErrorsInSchemaV1) {
  TargetPlatformCapabilities tpc = Minimal();
  tpc.set_schema_version(1);
  tpc.set_insert_preserving_quantizers(true);
  *tpc.add_fusing_patterns() =
      MakeFusing({Single(tpc.operator_set(0)), Single(tpc.operator_set(1))});
  *tpc.mutable_fusing_patterns(0)->mutable_fuse_op_quantization_config() =
      Config(8);
  EXPECT_THAT(TpcErrors(tpc),
              ElementsAre("insert_preserving_quantizers: not part of schema "
                          "version 1",
                          "fusing_patterns[0] (\"Conv_ReLU\")."
                          "fuse_op_quantization_config: not part of schema "
                          "version 1"));
}

TEST(ValidationTest, CustomOperatorSetNamesAreAllowedWithAWarning) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.add_operator_set() = MakeOpSet("MyNms");
  EXPECT_TRUE(ValidateTpc(tpc).ok());
  EXPECT_THAT(TpcWarnings(tpc),
              ElementsAre(HasSubstr("operator_set[2] (\"MyNms\"): custom "
                                    "operator set name")));
}

TEST(ValidationTest, AllErrorsAreCollectedIntoOneStatus) {
  TargetPlatformCapabilities tpc = Minimal();
  *tpc.mutable_default_qco() = MakeQco({Config(8), Config(16)}, Config(8));
  *tpc.add_operator_set() = MakeOpSet("Conv");
  *tpc.add_operator_set() =
      MakeOpSet("Add", MakeQco({Config(8), Config(16), Config(4)}));
  absl::Status s = ValidateTpc(tpc);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("(3 errors)"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("operator_set[3] (\"Add\").qc_options: 3 "
                        "configurations but no base_config"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("operator_set[2] (\"Conv\"): duplicate"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("default_qco: must contain"));
}

TEST(ValidationTest, TfliteBuiltinWarnsAboutPreservingWithQuantization) {
  // MCT's own TFLite TPC sets both flags on its preserving op sets.
  TargetPlatformCapabilities tpc = TfliteTpc();
  EXPECT_TRUE(ValidateTpc(tpc).ok());
  EXPECT_FALSE(TpcWarnings(tpc).empty());
}

}  // namespace
}  // namespace quantd::tpc
