// MCT-exported TPC JSON (fixtures/mct-tpc, written by MCT v2.3.0) against our
// loader, validation, built-ins and exporter. The fixtures are the oracle.
#include <set>
#include <string>

#include "core/tpc/builtins.h"
#include "core/tpc/json_io.h"
#include "core/tpc/schema_upgrade.h"
#include "core/tpc/validation.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/core/tpc/tpc_test_util.h"

namespace quantd::tpc {
namespace {

using quantd::v1::TargetPlatformCapabilities;
using testing::FixturePath;
using testing::ProtoDiff;
using testing::ReadFile;

TargetPlatformCapabilities LoadFixtureV1(const std::string& file) {
  auto tpc = LoadTpcFile(FixturePath(file), {.upgrade_to_v2 = false});
  EXPECT_TRUE(tpc.ok()) << tpc.status();
  return tpc.ok() ? *tpc : TargetPlatformCapabilities();
}

TargetPlatformCapabilities Builtin(const std::string& name,
                                   const std::string& version) {
  for (auto& b : BuiltinTpcs()) {
    if (b.name == name && b.version == version) return b.tpc;
  }
  ADD_FAILURE() << "no built-in " << name << "@" << version;
  return {};
}

// The built-in equals the fixture field by field, and exporting it as schema
// v1 reproduces MCT's file byte for byte (same keys, order, enum integers,
// names, number formatting).
void ExpectBuiltinEqualsFixture(const std::string& name,
                                const std::string& version,
                                const std::string& file) {
  TargetPlatformCapabilities fixture = LoadFixtureV1(file);
  TargetPlatformCapabilities builtin = Builtin(name, version);
  EXPECT_EQ(builtin.version(), version);
  builtin.clear_version();
  EXPECT_EQ(ProtoDiff(fixture, builtin), "") << file;
  const std::string exported = TpcToJson(builtin, {.schema_version = 1});
  EXPECT_EQ(exported, ReadFile(FixturePath(file))) << file;
}

TEST(BuiltinFixtureTest, Imx500_1_0EqualsImx500Json) {
  ExpectBuiltinEqualsFixture("imx500", "1.0", "imx500.json");
}
TEST(BuiltinFixtureTest, Imx500_1_0EqualsDefaultJson) {
  ExpectBuiltinEqualsFixture("imx500", "1.0", "default.json");
}
TEST(BuiltinFixtureTest, Imx500_1_0_LutEqualsImx500V1LutJson) {
  ExpectBuiltinEqualsFixture("imx500", "1.0_lut", "imx500_v1_lut.json");
}
TEST(BuiltinFixtureTest, Imx500_1_0_PotEqualsImx500V1PotJson) {
  ExpectBuiltinEqualsFixture("imx500", "1.0_pot", "imx500_v1_pot.json");
}
TEST(BuiltinFixtureTest, Imx500_2_0EqualsImx500V2Json) {
  ExpectBuiltinEqualsFixture("imx500", "2.0", "imx500_v2.json");
}
TEST(BuiltinFixtureTest, Imx500_2_0_LutEqualsImx500V2LutJson) {
  ExpectBuiltinEqualsFixture("imx500", "2.0_lut", "imx500_v2_lut.json");
}
TEST(BuiltinFixtureTest, Imx500_3_0EqualsImx500V3Json) {
  ExpectBuiltinEqualsFixture("imx500", "3.0", "imx500_v3.json");
}
TEST(BuiltinFixtureTest, Imx500_3_0_LutEqualsImx500V3LutJson) {
  ExpectBuiltinEqualsFixture("imx500", "3.0_lut", "imx500_v3_lut.json");
}
TEST(BuiltinFixtureTest, Imx500_4_0EqualsImx500V4Json) {
  ExpectBuiltinEqualsFixture("imx500", "4.0", "imx500_v4.json");
}
TEST(BuiltinFixtureTest, Tflite_1_0EqualsTfliteJson) {
  ExpectBuiltinEqualsFixture("tflite", "1.0", "tflite.json");
}
TEST(BuiltinFixtureTest, Qnnpack_1_0EqualsQnnpackJson) {
  ExpectBuiltinEqualsFixture("qnnpack", "1.0", "qnnpack.json");
}

class FixtureLoadTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureLoadTest, LoadsUpgradesAndValidates) {
  auto tpc = LoadTpcFile(FixturePath(GetParam()));
  ASSERT_TRUE(tpc.ok()) << tpc.status();
  EXPECT_TRUE(ValidateTpc(*tpc).ok()) << ValidateTpc(*tpc);
  // MCT's v1 -> v2 upgrade.
  EXPECT_EQ(tpc->schema_version(), 2);
  EXPECT_FALSE(tpc->insert_preserving_quantizers());
  for (const auto& f : tpc->fusing_patterns()) {
    ASSERT_TRUE(f.has_fuse_op_quantization_config());
    EXPECT_FALSE(
        f.fuse_op_quantization_config().enable_activation_quantization());
    EXPECT_EQ(f.fuse_op_quantization_config().activation_n_bits(),
              tpc->default_qco().base_config().activation_n_bits());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllFixtures, FixtureLoadTest,
    ::testing::Values("default.json", "imx500.json", "imx500_v1.json",
                      "imx500_v1_lut.json", "imx500_v1_pot.json",
                      "imx500_v2.json", "imx500_v2_lut.json", "imx500_v3.json",
                      "imx500_v3_lut.json", "imx500_v4.json", "qnnpack.json",
                      "tflite.json"),
    [](const auto& info) {
      std::string n = info.param.substr(0, info.param.size() - 5);
      for (char& ch : n) {
        if (ch == '.') ch = '_';
      }
      return n;
    });

TEST(FixtureTest, Imx500V1DiffersFromPackageV1ByBatchNormAndMetadata) {
  // fixtures/mct-tpc/README.md: the test-tree v1 adds BatchNorm and has
  // add_metadata false like the package v1.
  TargetPlatformCapabilities test_v1 = LoadFixtureV1("imx500_v1.json");
  TargetPlatformCapabilities package = Builtin("imx500", "1.0");
  EXPECT_EQ(test_v1.operator_set_size(), package.operator_set_size() + 1);
  EXPECT_EQ(test_v1.operator_set(8).name(), "BatchNorm");
}

// Collects every key path of a JSON document ("a.b[].c").
void KeyPaths(const nlohmann::json& j, const std::string& prefix,
              std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      // Attribute names are data, not schema keys.
      const bool data_keys =
          prefix.size() >= 28 &&
          prefix.substr(prefix.size() - 28) == "attr_weights_configs_mapping";
      const std::string p = prefix + "." + (data_keys ? "*" : k);
      out.insert(p);
      KeyPaths(v, p, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) KeyPaths(v, prefix + "[]", out);
  }
}

TEST(ExportTest, SchemaV2ExportHasMctKeysPlusV2Fields) {
  // v2 export = v1 keys + insert_preserving_quantizers + Fusing's
  // fuse_op_quantization_config (MCT schema/v2.py).
  TargetPlatformCapabilities tpc = Builtin("imx500", "4.0");
  UpgradeToV2(tpc);
  std::set<std::string> ours, mct;
  KeyPaths(nlohmann::json::parse(TpcToJson(tpc)), "", ours);
  KeyPaths(nlohmann::json::parse(ReadFile(FixturePath("imx500_v4.json"))), "",
           mct);
  std::set<std::string> extra;
  for (const auto& k : ours) {
    if (!mct.count(k)) extra.insert(k);
  }
  for (const auto& k : mct) EXPECT_TRUE(ours.count(k)) << "missing " << k;
  ASSERT_FALSE(extra.empty());
  for (const auto& k : extra) {
    EXPECT_TRUE(k == ".insert_preserving_quantizers" ||
                k.rfind(".fusing_patterns[].fuse_op_quantization_config", 0) ==
                    0)
        << "unexpected " << k;
  }
}

TEST(RoundTripTest, EveryBuiltinSurvivesJsonRoundTrip) {
  for (const auto& b : BuiltinTpcs()) {
    for (int schema : {1, 2}) {
      if (schema == 1 && b.tpc.schema_version() == 2) continue;
      auto back = TpcFromJson(
          TpcToJson(b.tpc, {.schema_version = schema, .include_version = true}),
          {.upgrade_to_v2 = false});
      ASSERT_TRUE(back.ok()) << b.name << "@" << b.version << back.status();
      TargetPlatformCapabilities expected = b.tpc;
      if (schema == 2) UpgradeToV2(expected);
      EXPECT_EQ(ProtoDiff(expected, *back), "") << b.name << "@" << b.version;
    }
  }
}

TEST(BuiltinTest, EveryBuiltinValidates) {
  for (const auto& b : BuiltinTpcs()) {
    EXPECT_TRUE(ValidateTpc(b.tpc).ok())
        << b.name << "@" << b.version << ": " << ValidateTpc(b.tpc);
  }
}

}  // namespace
}  // namespace quantd::tpc
