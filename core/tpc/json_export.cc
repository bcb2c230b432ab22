// MCT TPC JSON export (TpcToJson): MCT's keys in MCT's order. Import is in
// json_import.cc.
#include <string>
#include <utility>

#include "core/tpc/builder.h"
#include "core/tpc/json_io.h"
#include "core/tpc/schema_upgrade.h"
#include "core/util/json_text.h"
#include "nlohmann/json.hpp"

namespace quantd::tpc {
namespace {

using OrderedJson = nlohmann::ordered_json;
using quantd::v1::AttributeQuantizationConfig;
using quantd::v1::FusingGroup;
using quantd::v1::OperatorSetGroup;
using quantd::v1::OperatorsSet;
using quantd::v1::OpQuantizationConfig;
using quantd::v1::QuantizationConfigOptions;
using quantd::v1::TargetPlatformCapabilities;

OrderedJson AttrToJson(const AttributeQuantizationConfig& a) {
  OrderedJson j = OrderedJson::object();
  j["weights_quantization_method"] =
      static_cast<int>(a.weights_quantization_method());
  j["weights_n_bits"] = a.weights_n_bits();
  j["weights_per_channel_threshold"] = a.weights_per_channel_threshold();
  j["enable_weights_quantization"] = a.enable_weights_quantization();
  j["lut_values_bitwidth"] = a.has_lut_values_bitwidth()
                                 ? OrderedJson(a.lut_values_bitwidth())
                                 : OrderedJson(nullptr);
  return j;
}

OrderedJson OpConfigToJson(const OpQuantizationConfig& c) {
  OrderedJson j = OrderedJson::object();
  j["default_weight_attr_config"] = AttrToJson(c.default_weight_attr_config());
  // Proto maps are unordered: write MCT's generic keys in the order MCT's
  // TPCs declare them, then any others sorted.
  OrderedJson mapping = OrderedJson::object();
  const auto& m = c.attr_weights_configs_mapping();
  for (const char* key : {kKernelAttr, kBiasAttr, kPosAttr}) {
    if (auto it = m.find(key); it != m.end())
      mapping[key] = AttrToJson(it->second);
  }
  std::vector<std::string> others;
  for (const auto& [key, value] : m) {
    if (key != kKernelAttr && key != kBiasAttr && key != kPosAttr) {
      others.push_back(key);
    }
  }
  std::sort(others.begin(), others.end());
  for (const auto& key : others) mapping[key] = AttrToJson(m.at(key));
  j["attr_weights_configs_mapping"] = std::move(mapping);
  j["activation_quantization_method"] =
      static_cast<int>(c.activation_quantization_method());
  j["activation_n_bits"] = c.activation_n_bits();
  OrderedJson bits = OrderedJson::array();
  for (int b : c.supported_input_activation_n_bits()) bits.push_back(b);
  j["supported_input_activation_n_bits"] = std::move(bits);
  j["enable_activation_quantization"] = c.enable_activation_quantization();
  j["quantization_preserving"] = c.quantization_preserving();
  j["fixed_scale"] =
      c.has_fixed_scale() ? OrderedJson(c.fixed_scale()) : OrderedJson(nullptr);
  j["fixed_zero_point"] = c.has_fixed_zero_point()
                              ? OrderedJson(c.fixed_zero_point())
                              : OrderedJson(nullptr);
  j["simd_size"] =
      c.has_simd_size() ? OrderedJson(c.simd_size()) : OrderedJson(nullptr);
  j["signedness"] = static_cast<int>(c.signedness());
  return j;
}

OrderedJson QcoToJson(const QuantizationConfigOptions& q) {
  OrderedJson j = OrderedJson::object();
  OrderedJson configs = OrderedJson::array();
  for (const auto& c : q.quantization_configurations()) {
    configs.push_back(OpConfigToJson(c));
  }
  j["quantization_configurations"] = std::move(configs);
  j["base_config"] = q.has_base_config() ? OpConfigToJson(q.base_config())
                                         : OrderedJson(nullptr);
  return j;
}

OrderedJson OpSetToJson(const OperatorsSet& s) {
  OrderedJson j = OrderedJson::object();
  j["name"] = s.name();
  j["qc_options"] =
      s.has_qc_options() ? QcoToJson(s.qc_options()) : OrderedJson(nullptr);
  j["type"] = "OperatorsSet";
  return j;
}

OrderedJson FusingGroupToJson(const FusingGroup& g) {
  if (g.has_operators_set()) return OpSetToJson(g.operators_set());
  OrderedJson j = OrderedJson::object();
  OrderedJson sets = OrderedJson::array();
  for (const auto& s : g.operator_set_group().operators_set()) {
    sets.push_back(OpSetToJson(s));
  }
  j["operators_set"] = std::move(sets);
  j["name"] = FusingGroupName(g);
  j["type"] = "OperatorSetGroup";
  return j;
}

}  // namespace

std::string TpcToJson(const TargetPlatformCapabilities& tpc_in,
                      const JsonExportOptions& options) {
  const bool v2 = options.schema_version >= 2;
  // A v1 TPC exported as v2 is upgraded first, as MCT would load it.
  TargetPlatformCapabilities upgraded;
  if (v2 && tpc_in.schema_version() < 2) {
    upgraded = tpc_in;
    UpgradeToV2(upgraded);
  }
  const TargetPlatformCapabilities& tpc =
      v2 && tpc_in.schema_version() < 2 ? upgraded : tpc_in;
  OrderedJson j = OrderedJson::object();
  j["default_qco"] = QcoToJson(tpc.default_qco());
  if (tpc.operator_set_size() > 0) {
    OrderedJson sets = OrderedJson::array();
    for (const auto& s : tpc.operator_set()) sets.push_back(OpSetToJson(s));
    j["operator_set"] = std::move(sets);
  } else {
    j["operator_set"] = nullptr;
  }
  if (tpc.fusing_patterns_size() > 0) {
    OrderedJson patterns = OrderedJson::array();
    for (const auto& f : tpc.fusing_patterns()) {
      OrderedJson fj = OrderedJson::object();
      OrderedJson groups = OrderedJson::array();
      for (const auto& g : f.operator_groups()) {
        groups.push_back(FusingGroupToJson(g));
      }
      fj["operator_groups"] = std::move(groups);
      if (v2) {
        fj["fuse_op_quantization_config"] =
            f.has_fuse_op_quantization_config()
                ? OpConfigToJson(f.fuse_op_quantization_config())
                : OrderedJson(nullptr);
      }
      fj["name"] = f.has_name() ? OrderedJson(f.name()) : OrderedJson(nullptr);
      patterns.push_back(std::move(fj));
    }
    j["fusing_patterns"] = std::move(patterns);
  } else {
    j["fusing_patterns"] = nullptr;
  }
  j["tpc_minor_version"] = tpc.has_tpc_minor_version()
                               ? OrderedJson(tpc.tpc_minor_version())
                               : OrderedJson(nullptr);
  j["tpc_patch_version"] = tpc.has_tpc_patch_version()
                               ? OrderedJson(tpc.tpc_patch_version())
                               : OrderedJson(nullptr);
  j["tpc_platform_type"] = tpc.has_tpc_platform_type()
                               ? OrderedJson(tpc.tpc_platform_type())
                               : OrderedJson(nullptr);
  j["add_metadata"] = tpc.add_metadata();
  j["name"] = tpc.has_name() ? OrderedJson(tpc.name()) : OrderedJson(nullptr);
  j["is_simd_padding"] = tpc.is_simd_padding();
  if (v2)
    j["insert_preserving_quantizers"] = tpc.insert_preserving_quantizers();
  j["SCHEMA_VERSION"] = v2 ? 2 : 1;
  if (options.include_version && !tpc.version().empty()) {
    j["version"] = tpc.version();
  }
  // Names in a TPC parsed from text or binary proto need not be UTF-8.
  return JsonText(j, 4);
}

}  // namespace quantd::tpc
