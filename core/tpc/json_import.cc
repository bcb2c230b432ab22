// MCT TPC JSON import (TpcFromJson), the text-format reader and LoadTpcFile.
// Export is in json_export.cc.
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tpc/builder.h"
#include "core/tpc/json_io.h"
#include "core/tpc/schema_upgrade.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "nlohmann/json.hpp"

namespace quantd::tpc {
namespace {

using Json = nlohmann::json;
using quantd::v1::AttributeQuantizationConfig;
using quantd::v1::Fusing;
using quantd::v1::FusingGroup;
using quantd::v1::OperatorSetGroup;
using quantd::v1::OperatorsSet;
using quantd::v1::OpQuantizationConfig;
using quantd::v1::QuantizationConfigOptions;
using quantd::v1::TargetPlatformCapabilities;

// Walks a parsed JSON document, collecting every error with its path so that
// one load reports all problems.
class Reader {
 public:
  std::vector<std::string>& errors() { return errors_; }

  void Error(const std::string& path, absl::string_view message) {
    errors_.push_back(absl::StrCat(path, ": ", message));
  }

  // Checks `j` is an object and that it only has `allowed` keys (unknown keys
  // are usually typos; MCT itself would silently ignore them).
  bool Object(const Json& j, const std::string& path,
              const std::vector<std::string_view>& allowed) {
    if (!j.is_object()) {
      Error(path, absl::StrCat("expected an object, got ", j.type_name()));
      return false;
    }
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (auto a : allowed) known = known || a == key;
      if (!known) Error(Join(path, key), "unknown field");
    }
    return true;
  }

  static std::string Join(const std::string& path, absl::string_view key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }

  const Json* Field(const Json& j, const std::string& path,
                    const std::string& key, bool required) {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) Error(Join(path, key), "missing required field");
      return nullptr;
    }
    return &*it;
  }

  std::optional<int64_t> Int(const Json& j, const std::string& path,
                             int64_t min, int64_t max) {
    if (!j.is_number_integer()) {
      Error(path, absl::StrCat("expected an integer, got ", j.type_name()));
      return std::nullopt;
    }
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() > static_cast<uint64_t>(max)) {
      Error(path, absl::StrCat(j.get<uint64_t>(), " out of range [", min, ", ",
                               max, "]"));
      return std::nullopt;
    }
    int64_t v = j.get<int64_t>();
    if (v < min || v > max) {
      Error(path, absl::StrCat(v, " out of range [", min, ", ", max, "]"));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> Bool(const Json& j, const std::string& path) {
    if (!j.is_boolean()) {
      Error(path, absl::StrCat("expected a boolean, got ", j.type_name()));
      return std::nullopt;
    }
    return j.get<bool>();
  }

  std::optional<std::string> String(const Json& j, const std::string& path) {
    if (!j.is_string()) {
      Error(path, absl::StrCat("expected a string, got ", j.type_name()));
      return std::nullopt;
    }
    return j.get<std::string>();
  }

  static constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  static constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

  void ReadAttr(const Json& j, const std::string& path,
                AttributeQuantizationConfig* out) {
    if (!Object(j, path,
                {"weights_quantization_method", "weights_n_bits",
                 "weights_per_channel_threshold", "enable_weights_quantization",
                 "lut_values_bitwidth"})) {
      return;
    }
    // Every field has an MCT default.
    out->set_weights_n_bits(kFloatBitwidth);
    if (const Json* f = Field(j, path, "weights_quantization_method", false)) {
      if (auto v = Int(*f, Join(path, "weights_quantization_method"), 0, 4)) {
        out->set_weights_quantization_method(
            static_cast<quantd::v1::QuantizationMethod>(*v));
      }
    }
    if (const Json* f = Field(j, path, "weights_n_bits", false)) {
      if (auto v =
              Int(*f, Join(path, "weights_n_bits"), kInt32Min, kInt32Max)) {
        out->set_weights_n_bits(static_cast<int32_t>(*v));
      }
    }
    if (const Json* f =
            Field(j, path, "weights_per_channel_threshold", false)) {
      if (auto v = Bool(*f, Join(path, "weights_per_channel_threshold"))) {
        out->set_weights_per_channel_threshold(*v);
      }
    }
    if (const Json* f = Field(j, path, "enable_weights_quantization", false)) {
      if (auto v = Bool(*f, Join(path, "enable_weights_quantization"))) {
        out->set_enable_weights_quantization(*v);
      }
    }
    if (const Json* f = Field(j, path, "lut_values_bitwidth", false);
        f && !f->is_null()) {
      if (auto v = Int(*f, Join(path, "lut_values_bitwidth"), kInt32Min,
                       kInt32Max)) {
        out->set_lut_values_bitwidth(static_cast<int32_t>(*v));
      }
    }
  }

  void ReadOpConfig(const Json& j, const std::string& path,
                    OpQuantizationConfig* out) {
    if (!Object(
            j, path,
            {"default_weight_attr_config", "attr_weights_configs_mapping",
             "activation_quantization_method", "activation_n_bits",
             "supported_input_activation_n_bits",
             "enable_activation_quantization", "quantization_preserving",
             "fixed_scale", "fixed_zero_point", "simd_size", "signedness"})) {
      return;
    }
    if (const Json* f = Field(j, path, "default_weight_attr_config", true)) {
      ReadAttr(*f, Join(path, "default_weight_attr_config"),
               out->mutable_default_weight_attr_config());
    }
    if (const Json* f = Field(j, path, "attr_weights_configs_mapping", true)) {
      std::string p = Join(path, "attr_weights_configs_mapping");
      if (!f->is_object()) {
        Error(p, absl::StrCat("expected an object, got ", f->type_name()));
      } else {
        for (const auto& [key, value] : f->items()) {
          ReadAttr(value, Join(p, key),
                   &(*out->mutable_attr_weights_configs_mapping())[key]);
        }
      }
    }
    if (const Json* f =
            Field(j, path, "activation_quantization_method", true)) {
      if (auto v =
              Int(*f, Join(path, "activation_quantization_method"), 0, 4)) {
        out->set_activation_quantization_method(
            static_cast<quantd::v1::QuantizationMethod>(*v));
      }
    }
    if (const Json* f = Field(j, path, "activation_n_bits", true)) {
      if (auto v =
              Int(*f, Join(path, "activation_n_bits"), kInt32Min, kInt32Max)) {
        out->set_activation_n_bits(static_cast<int32_t>(*v));
      }
    }
    if (const Json* f =
            Field(j, path, "supported_input_activation_n_bits", true)) {
      // MCT: an int becomes a 1-tuple.
      std::string p = Join(path, "supported_input_activation_n_bits");
      if (f->is_array()) {
        for (size_t i = 0; i < f->size(); ++i) {
          if (auto v = Int((*f)[i], absl::StrCat(p, "[", i, "]"), kInt32Min,
                           kInt32Max)) {
            out->add_supported_input_activation_n_bits(
                static_cast<int32_t>(*v));
          }
        }
      } else if (auto v = Int(*f, p, kInt32Min, kInt32Max)) {
        out->add_supported_input_activation_n_bits(static_cast<int32_t>(*v));
      }
    }
    if (const Json* f =
            Field(j, path, "enable_activation_quantization", true)) {
      if (auto v = Bool(*f, Join(path, "enable_activation_quantization"))) {
        out->set_enable_activation_quantization(*v);
      }
    }
    if (const Json* f = Field(j, path, "quantization_preserving", true)) {
      if (auto v = Bool(*f, Join(path, "quantization_preserving"))) {
        out->set_quantization_preserving(*v);
      }
    }
    if (const Json* f = Field(j, path, "fixed_scale", false);
        f && !f->is_null()) {
      if (!f->is_number()) {
        Error(Join(path, "fixed_scale"),
              absl::StrCat("expected a number, got ", f->type_name()));
      } else {
        out->set_fixed_scale(f->get<double>());
      }
    }
    if (const Json* f = Field(j, path, "fixed_zero_point", false);
        f && !f->is_null()) {
      if (auto v =
              Int(*f, Join(path, "fixed_zero_point"), kInt32Min, kInt32Max)) {
        out->set_fixed_zero_point(*v);
      }
    }
    if (const Json* f = Field(j, path, "simd_size", false);
        f && !f->is_null()) {
      if (auto v = Int(*f, Join(path, "simd_size"), kInt32Min, kInt32Max)) {
        out->set_simd_size(static_cast<int32_t>(*v));
      }
    }
    if (const Json* f = Field(j, path, "signedness", true)) {
      if (auto v = Int(*f, Join(path, "signedness"), 0, 2)) {
        out->set_signedness(static_cast<quantd::v1::Signedness>(*v));
      }
    }
  }

  void ReadQco(const Json& j, const std::string& path,
               QuantizationConfigOptions* out) {
    if (!Object(j, path, {"quantization_configurations", "base_config"})) {
      return;
    }
    if (const Json* f = Field(j, path, "quantization_configurations", true)) {
      std::string p = Join(path, "quantization_configurations");
      if (!f->is_array()) {
        Error(p, absl::StrCat("expected an array, got ", f->type_name()));
      } else {
        for (size_t i = 0; i < f->size(); ++i) {
          ReadOpConfig((*f)[i], absl::StrCat(p, "[", i, "]"),
                       out->add_quantization_configurations());
        }
      }
    }
    if (const Json* f = Field(j, path, "base_config", false);
        f && !f->is_null()) {
      ReadOpConfig(*f, Join(path, "base_config"), out->mutable_base_config());
    } else if (out->quantization_configurations_size() == 1) {
      // MCT: a single configuration is its own base.
      *out->mutable_base_config() = out->quantization_configurations(0);
    }
  }

  void ReadOpSet(const Json& j, const std::string& path, OperatorsSet* out) {
    if (!Object(j, path, {"name", "qc_options", "type"})) return;
    if (const Json* f = Field(j, path, "name", true)) {
      if (auto v = String(*f, Join(path, "name"))) out->set_name(*v);
    }
    if (const Json* f = Field(j, path, "qc_options", false);
        f && !f->is_null()) {
      ReadQco(*f, Join(path, "qc_options"), out->mutable_qc_options());
    }
    if (const Json* f = Field(j, path, "type", false)) {
      if (auto v = String(*f, Join(path, "type")); v && *v != "OperatorsSet") {
        Error(Join(path, "type"),
              absl::StrCat("expected \"OperatorsSet\", got \"", *v, "\""));
      }
    }
  }

  void ReadGroup(const Json& j, const std::string& path,
                 OperatorSetGroup* out) {
    // "op_set_list" is the older OperatorSetConcat's field name.
    if (!Object(j, path, {"operators_set", "op_set_list", "name", "type"})) {
      return;
    }
    const Json* sets = Field(j, path, "operators_set", false);
    std::string key = "operators_set";
    if (sets == nullptr) {
      sets = Field(j, path, "op_set_list", false);
      key = "op_set_list";
    }
    if (sets == nullptr) {
      Error(Join(path, "operators_set"), "missing required field");
    } else if (!sets->is_array()) {
      Error(Join(path, key),
            absl::StrCat("expected an array, got ", sets->type_name()));
    } else {
      for (size_t i = 0; i < sets->size(); ++i) {
        ReadOpSet((*sets)[i], absl::StrCat(Join(path, key), "[", i, "]"),
                  out->add_operators_set());
      }
    }
    if (const Json* f = Field(j, path, "name", false); f && !f->is_null()) {
      if (auto v = String(*f, Join(path, "name"))) out->set_name(*v);
    } else {
      std::vector<std::string> names;
      for (const auto& s : out->operators_set()) names.push_back(s.name());
      out->set_name(absl::StrJoin(names, "_"));
    }
  }

  void ReadFusingGroup(const Json& j, const std::string& path,
                       FusingGroup* out) {
    if (!j.is_object()) {
      Error(path, absl::StrCat("expected an object, got ", j.type_name()));
      return;
    }
    std::string type;
    if (auto it = j.find("type"); it != j.end() && it->is_string()) {
      type = it->get<std::string>();
    } else {
      type = (j.contains("operators_set") || j.contains("op_set_list"))
                 ? "OperatorSetGroup"
                 : "OperatorsSet";
    }
    if (type == "OperatorSetGroup" || type == "OperatorSetConcat") {
      Json copy = j;
      copy.erase("type");
      ReadGroup(copy, path, out->mutable_operator_set_group());
    } else if (type == "OperatorsSet") {
      ReadOpSet(j, path, out->mutable_operators_set());
    } else {
      Error(Join(path, "type"), absl::StrCat("unknown discriminator \"", type,
                                             "\" (expected \"OperatorsSet\" or "
                                             "\"OperatorSetGroup\")"));
    }
  }

  void ReadFusing(const Json& j, const std::string& path, Fusing* out) {
    // "operator_groups_list" is the older API's field name.
    if (!Object(j, path,
                {"operator_groups", "operator_groups_list",
                 "fuse_op_quantization_config", "name"})) {
      return;
    }
    const Json* groups = Field(j, path, "operator_groups", false);
    std::string key = "operator_groups";
    if (groups == nullptr) {
      groups = Field(j, path, "operator_groups_list", false);
      key = "operator_groups_list";
    }
    if (groups == nullptr) {
      Error(Join(path, "operator_groups"), "missing required field");
    } else if (!groups->is_array()) {
      Error(Join(path, key),
            absl::StrCat("expected an array, got ", groups->type_name()));
    } else {
      for (size_t i = 0; i < groups->size(); ++i) {
        ReadFusingGroup((*groups)[i],
                        absl::StrCat(Join(path, key), "[", i, "]"),
                        out->add_operator_groups());
      }
    }
    if (const Json* f = Field(j, path, "fuse_op_quantization_config", false);
        f && !f->is_null()) {
      ReadOpConfig(*f, Join(path, "fuse_op_quantization_config"),
                   out->mutable_fuse_op_quantization_config());
    }
    if (const Json* f = Field(j, path, "name", false); f && !f->is_null()) {
      if (auto v = String(*f, Join(path, "name"))) out->set_name(*v);
    } else {
      std::vector<std::string> names;
      for (const auto& g : out->operator_groups()) {
        names.push_back(FusingGroupName(g));
      }
      out->set_name(absl::StrJoin(names, "_"));
    }
  }

  void ReadTpc(const Json& j, TargetPlatformCapabilities* out) {
    const std::string path;
    if (!j.is_object()) {
      Error("$", absl::StrCat("expected an object, got ", j.type_name()));
      return;
    }
    for (const auto& [key, value] : j.items()) {
      static const std::vector<std::string_view> kAllowed = {
          "default_qco",       "operator_set",
          "fusing_patterns",   "tpc_minor_version",
          "tpc_patch_version", "tpc_platform_type",
          "add_metadata",      "name",
          "is_simd_padding",   "insert_preserving_quantizers",
          "SCHEMA_VERSION",    "schema_version",
          "version",           "type"};
      bool known = false;
      for (auto a : kAllowed) known = known || a == key;
      if (!known) Error(key, "unknown field");
    }
    if (const Json* f = Field(j, path, "type", false)) {
      // The class name under its successive MCT names.
      auto v = String(*f, "type");
      if (v && *v != "TargetPlatformCapabilities" &&
          *v != "TargetPlatformModel" && *v != "HardwareModel") {
        Error("type", absl::StrCat("unknown TPC type \"", *v, "\""));
      }
    }
    int schema_version = kCurrentSchemaVersion;
    for (const char* key : {"SCHEMA_VERSION", "schema_version"}) {
      if (const Json* f = Field(j, path, key, false)) {
        if (auto v = Int(*f, key, 1, kCurrentSchemaVersion)) {
          schema_version = static_cast<int>(*v);
        }
      }
    }
    out->set_schema_version(schema_version);
    if (const Json* f = Field(j, path, "default_qco", true)) {
      ReadQco(*f, "default_qco", out->mutable_default_qco());
    }
    if (const Json* f = Field(j, path, "operator_set", false);
        f && !f->is_null()) {
      if (!f->is_array()) {
        Error("operator_set",
              absl::StrCat("expected an array, got ", f->type_name()));
      } else {
        for (size_t i = 0; i < f->size(); ++i) {
          ReadOpSet((*f)[i], absl::StrCat("operator_set[", i, "]"),
                    out->add_operator_set());
        }
      }
    }
    if (const Json* f = Field(j, path, "fusing_patterns", false);
        f && !f->is_null()) {
      if (!f->is_array()) {
        Error("fusing_patterns",
              absl::StrCat("expected an array, got ", f->type_name()));
      } else {
        for (size_t i = 0; i < f->size(); ++i) {
          ReadFusing((*f)[i], absl::StrCat("fusing_patterns[", i, "]"),
                     out->add_fusing_patterns());
        }
      }
    }
    if (const Json* f = Field(j, path, "tpc_minor_version", false);
        f && !f->is_null()) {
      if (auto v = Int(*f, "tpc_minor_version", kInt32Min, kInt32Max)) {
        out->set_tpc_minor_version(static_cast<int32_t>(*v));
      }
    }
    if (const Json* f = Field(j, path, "tpc_patch_version", false);
        f && !f->is_null()) {
      if (auto v = Int(*f, "tpc_patch_version", kInt32Min, kInt32Max)) {
        out->set_tpc_patch_version(static_cast<int32_t>(*v));
      }
    }
    if (const Json* f = Field(j, path, "tpc_platform_type", false);
        f && !f->is_null()) {
      if (auto v = String(*f, "tpc_platform_type")) {
        out->set_tpc_platform_type(*v);
      }
    }
    out->set_add_metadata(true);
    if (const Json* f = Field(j, path, "add_metadata", false)) {
      if (auto v = Bool(*f, "add_metadata")) out->set_add_metadata(*v);
    }
    if (const Json* f = Field(j, path, "name", false)) {
      if (!f->is_null()) {
        if (auto v = String(*f, "name")) out->set_name(*v);
      }
    } else {
      out->set_name("default_tpc");
    }
    if (const Json* f = Field(j, path, "is_simd_padding", false)) {
      if (auto v = Bool(*f, "is_simd_padding")) out->set_is_simd_padding(*v);
    }
    if (const Json* f = Field(j, path, "insert_preserving_quantizers", false)) {
      if (schema_version < 2) {
        Error("insert_preserving_quantizers", "not part of schema version 1");
      } else if (auto v = Bool(*f, "insert_preserving_quantizers")) {
        out->set_insert_preserving_quantizers(*v);
      }
    }
    if (schema_version < 2) {
      for (int i = 0; i < out->fusing_patterns_size(); ++i) {
        if (out->fusing_patterns(i).has_fuse_op_quantization_config()) {
          Error(absl::StrCat("fusing_patterns[", i,
                             "].fuse_op_quantization_config"),
                "not part of schema version 1");
        }
      }
    }
    if (const Json* f = Field(j, path, "version", false); f && !f->is_null()) {
      if (auto v = String(*f, "version")) out->set_version(*v);
    }
  }

 private:
  std::vector<std::string> errors_;
};

}  // namespace

absl::StatusOr<TargetPlatformCapabilities> TpcFromJson(
    std::string_view text, const JsonLoadOptions& options) {
  Json j = Json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions only to get the position of the error.
    try {
      Json unused = Json::parse(text.begin(), text.end());
      (void)unused;
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("TPC JSON does not parse: ", e.what()));
    }
    return absl::InvalidArgumentError("TPC JSON does not parse");
  }
  Reader reader;
  TargetPlatformCapabilities tpc;
  reader.ReadTpc(j, &tpc);
  if (!reader.errors().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid TPC JSON (", reader.errors().size(),
                     " errors):\n  ", absl::StrJoin(reader.errors(), "\n  ")));
  }
  if (options.upgrade_to_v2) UpgradeToV2(tpc);
  return tpc;
}

absl::StatusOr<TargetPlatformCapabilities> TpcFromTextproto(
    std::string_view text) {
  // Collects parser errors instead of logging them.
  class Collector : public google::protobuf::io::ErrorCollector {
   public:
    void AddError(int line, int column, const std::string& message) override {
      errors.push_back(absl::StrCat(line + 1, ":", column + 1, ": ", message));
    }
    std::vector<std::string> errors;
  };
  Collector collector;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  TargetPlatformCapabilities tpc;
  if (!parser.ParseFromString(std::string(text), &tpc)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid TPC textproto: ", absl::StrJoin(collector.errors, "; ")));
  }
  if (tpc.schema_version() == 0) tpc.set_schema_version(kCurrentSchemaVersion);
  return tpc;
}

absl::StatusOr<TargetPlatformCapabilities> LoadTpcFile(
    const std::string& path, const JsonLoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  // TPC files are small; refuse anything absurd before reading it.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  constexpr std::streamoff kMaxBytes = 64 << 20;
  if (size > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size, " bytes, more than the 64 MiB limit"));
  }
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), size);
  absl::StatusOr<TargetPlatformCapabilities> tpc;
  if (absl::EndsWith(path, ".json")) {
    tpc = TpcFromJson(text, options);
  } else if (absl::EndsWith(path, ".textproto") ||
             absl::EndsWith(path, ".txtpb") || absl::EndsWith(path, ".pbtxt")) {
    tpc = TpcFromTextproto(text);
    if (tpc.ok() && options.upgrade_to_v2) UpgradeToV2(*tpc);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": unknown TPC file type (expected .json, .textproto, .txtpb or "
        ".pbtxt)"));
  }
  if (!tpc.ok()) {
    return absl::Status(tpc.status().code(),
                        absl::StrCat(path, ": ", tpc.status().message()));
  }
  return tpc;
}

}  // namespace quantd::tpc
