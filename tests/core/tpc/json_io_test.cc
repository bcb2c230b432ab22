// Loader behaviour beyond the fixtures: MCT's input variants, error paths and
// the older API's names.
#include "core/tpc/json_io.h"

#include <string>

#include "core/tpc/builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/core/tpc/tpc_test_util.h"

namespace quantd::tpc {
namespace {

using ::testing::HasSubstr;
using testing::ProtoDiff;

nlohmann::json SmallTpcJson() {
  return nlohmann::json::parse(
      TpcToJson(QnnpackTpc(false), {.schema_version = 1}));
}

TEST(JsonIoTest, SupportedInputBitsAcceptsAnInt) {
  nlohmann::json j = SmallTpcJson();
  j["default_qco"]["quantization_configurations"][0]
   ["supported_input_activation_n_bits"] = 16;
  auto tpc = TpcFromJson(j.dump());
  ASSERT_TRUE(tpc.ok()) << tpc.status();
  EXPECT_THAT(tpc->default_qco()
                  .quantization_configurations(0)
                  .supported_input_activation_n_bits(),
              ::testing::ElementsAre(16));
}

TEST(JsonIoTest, MissingBaseConfigWithOneConfigBecomesThatConfig) {
  nlohmann::json j = SmallTpcJson();
  j["default_qco"].erase("base_config");
  auto tpc = TpcFromJson(j.dump());
  ASSERT_TRUE(tpc.ok()) << tpc.status();
  EXPECT_EQ(ProtoDiff(tpc->default_qco().base_config(),
                      tpc->default_qco().quantization_configurations(0)),
            "");
}

TEST(JsonIoTest, MissingOptionalFieldsTakeMctDefaults) {
  nlohmann::json j = SmallTpcJson();
  for (const char* k : {"add_metadata", "name", "is_simd_padding",
                        "SCHEMA_VERSION", "tpc_minor_version"}) {
    j.erase(k);
  }
  auto tpc = TpcFromJson(j.dump(), {.upgrade_to_v2 = false});
  ASSERT_TRUE(tpc.ok()) << tpc.status();
  EXPECT_TRUE(tpc->add_metadata());
  EXPECT_EQ(tpc->name(), "default_tpc");
  EXPECT_FALSE(tpc->is_simd_padding());
  EXPECT_EQ(tpc->schema_version(), 2);
  EXPECT_FALSE(tpc->has_tpc_minor_version());
}

TEST(JsonIoTest, ErrorsNameTheJsonPathAndAreAllReported) {
  nlohmann::json j = SmallTpcJson();
  j["operator_set"][3]["qc_options"] = {
      {"quantization_configurations",
       {j["default_qco"]["quantization_configurations"][0]}}};
  j["operator_set"][3]["qc_options"]["quantization_configurations"][0]
   ["activation_n_bits"] = "eight";
  j["operator_set"][5]["name"] = 7;
  j["fusing_patterns"][1]["operator_groups"][0]["type"] = "Mystery";
  j["tpc_platform_typo"] = "x";
  auto tpc = TpcFromJson(j.dump());
  ASSERT_FALSE(tpc.ok());
  const std::string m(tpc.status().message());
  EXPECT_EQ(tpc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m, HasSubstr("(4 errors)"));
  EXPECT_THAT(m, HasSubstr("operator_set[3].qc_options.quantization_"
                           "configurations[0].activation_n_bits: expected an "
                           "integer, got string"));
  EXPECT_THAT(m, HasSubstr("operator_set[5].name: expected a string, got "
                           "number"));
  EXPECT_THAT(m, HasSubstr("fusing_patterns[1].operator_groups[0].type: "
                           "unknown discriminator \"Mystery\""));
  EXPECT_THAT(m, HasSubstr("tpc_platform_typo: unknown field"));
}

TEST(JsonIoTest, EnumOutOfRangeIsAnError) {
  nlohmann::json j = SmallTpcJson();
  j["default_qco"]["base_config"]["activation_quantization_method"] = 9;
  auto tpc = TpcFromJson(j.dump());
  ASSERT_FALSE(tpc.ok());
  EXPECT_THAT(std::string(tpc.status().message()),
              HasSubstr("default_qco.base_config.activation_quantization_"
                        "method: 9 out of range [0, 4]"));
}

// tpc_fuzzer found it: a name that is not UTF-8 (here from a textproto)
// made the JSON export throw, which ended the process.
TEST(JsonIoTest, NamesThatAreNotUtf8ExportAsReplacementCharacters) {
  v1::TargetPlatformCapabilities tpc = QnnpackTpc(false);
  tpc.set_name(std::string("qnn\x8e\xffpack"));
  std::string json;
  ASSERT_NO_THROW(json = TpcToJson(tpc, {.schema_version = 1}));
  EXPECT_THAT(json, HasSubstr("qnn\xef\xbf\xbd\xef\xbf\xbdpack"));
  auto back = TpcFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name(), "qnn\xef\xbf\xbd\xef\xbf\xbdpack");
}

TEST(JsonIoTest, MalformedJsonIsInvalidArgument) {
  auto tpc = TpcFromJson("{\"default_qco\": ");
  EXPECT_EQ(tpc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(tpc.status().message()), HasSubstr("does not parse"));
}

TEST(JsonIoTest, NotAnObjectIsInvalidArgument) {
  auto tpc = TpcFromJson("[1, 2]");
  EXPECT_EQ(tpc.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JsonIoTest, OlderApiNamesAreAccepted) {
  // hardware_representation: OperatorSetConcat (op_set_list), Fusing's
  // operator_groups_list, TargetPlatformModel / HardwareModel as the type.
  nlohmann::json j = SmallTpcJson();
  auto& group = j["fusing_patterns"][0]["operator_groups"][0];
  group["type"] = "OperatorSetConcat";
  group["op_set_list"] = group["operators_set"];
  group.erase("operators_set");
  j["fusing_patterns"][0]["operator_groups_list"] =
      j["fusing_patterns"][0]["operator_groups"];
  j["fusing_patterns"][0].erase("operator_groups");
  j["type"] = "HardwareModel";
  auto tpc = TpcFromJson(j.dump(), {.upgrade_to_v2 = false});
  ASSERT_TRUE(tpc.ok()) << tpc.status();
  quantd::v1::TargetPlatformCapabilities expected = QnnpackTpc(false);
  expected.clear_version();
  EXPECT_EQ(ProtoDiff(expected, *tpc), "");
}

TEST(JsonIoTest, V2OnlyFieldsInV1FileAreErrors) {
  nlohmann::json j = SmallTpcJson();
  j["insert_preserving_quantizers"] = true;
  auto tpc = TpcFromJson(j.dump());
  ASSERT_FALSE(tpc.ok());
  EXPECT_THAT(std::string(tpc.status().message()),
              HasSubstr("insert_preserving_quantizers: not part of schema "
                        "version 1"));
}

TEST(JsonIoTest, TextprotoLoads) {
  auto tpc = TpcFromTextproto(R"pb(
    name: "tiny"
    version: "0.1"
    default_qco { quantization_configurations { activation_n_bits: 8 } }
    operator_set { name: "Conv" }
  )pb");
  ASSERT_TRUE(tpc.ok()) << tpc.status();
  EXPECT_EQ(tpc->name(), "tiny");
  EXPECT_EQ(tpc->schema_version(), 2);
  EXPECT_EQ(tpc->operator_set(0).name(), "Conv");
}

TEST(JsonIoTest, TextprotoErrorsNameTheLine) {
  auto tpc = TpcFromTextproto("name: \"x\"\nbogus_field: 1\n");
  ASSERT_FALSE(tpc.ok());
  EXPECT_THAT(std::string(tpc.status().message()), HasSubstr("2:"));
  EXPECT_THAT(std::string(tpc.status().message()), HasSubstr("bogus_field"));
}

TEST(JsonIoTest, UnknownFileTypeIsRejected) {
  auto tpc = LoadTpcFile("/nonexistent/tpc.yaml");
  EXPECT_FALSE(tpc.ok());
}

}  // namespace
}  // namespace quantd::tpc
