#include "core/tpc/builder.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace quantd::tpc {

using quantd::v1::AttributeQuantizationConfig;
using quantd::v1::FusingGroup;
using quantd::v1::OperatorsSet;
using quantd::v1::OpQuantizationConfig;
using quantd::v1::QuantizationConfigOptions;

AttributeQuantizationConfig MakeAttrConfig(
    quantd::v1::QuantizationMethod method, int n_bits, bool per_channel,
    bool enabled, std::optional<int> lut_values_bitwidth) {
  AttributeQuantizationConfig c;
  c.set_weights_quantization_method(method);
  c.set_weights_n_bits(n_bits);
  c.set_weights_per_channel_threshold(per_channel);
  c.set_enable_weights_quantization(enabled);
  if (lut_values_bitwidth) c.set_lut_values_bitwidth(*lut_values_bitwidth);
  return c;
}

absl::StatusOr<OpQuantizationConfig> CloneAndEdit(
    const OpQuantizationConfig& config, const OpEdit& edit,
    const std::map<std::string, AttrEdit>& attr_to_edit) {
  OpQuantizationConfig out = config;
  if (edit) edit(out);
  for (const auto& [attr, attr_edit] : attr_to_edit) {
    auto* mapping = out.mutable_attr_weights_configs_mapping();
    auto it = mapping->find(attr);
    if (it == mapping->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("clone_and_edit: attribute '", attr,
                       "' is not in attr_weights_configs_mapping"));
    }
    attr_edit(it->second);
  }
  return out;
}

QuantizationConfigOptions MakeQco(
    const std::vector<OpQuantizationConfig>& configs,
    std::optional<OpQuantizationConfig> base) {
  QuantizationConfigOptions q;
  for (const auto& c : configs) *q.add_quantization_configurations() = c;
  if (base) {
    *q.mutable_base_config() = *base;
  } else if (configs.size() == 1) {
    *q.mutable_base_config() = configs[0];
  }
  return q;
}

QuantizationConfigOptions CloneAndEdit(const QuantizationConfigOptions& options,
                                       const OpEdit& edit) {
  QuantizationConfigOptions out = options;
  for (auto& c : *out.mutable_quantization_configurations()) edit(c);
  if (out.has_base_config()) edit(*out.mutable_base_config());
  return out;
}

namespace {

absl::Status EditAttrs(OpQuantizationConfig& config,
                       const std::vector<std::string>& attrs,
                       const AttrEdit& edit) {
  auto* mapping = config.mutable_attr_weights_configs_mapping();
  if (attrs.empty()) {
    for (auto& [name, attr] : *mapping) edit(attr);
    return absl::OkStatus();
  }
  for (const auto& name : attrs) {
    auto it = mapping->find(name);
    if (it == mapping->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("clone_and_edit_weight_attribute: attribute '", name,
                       "' is not in attr_weights_configs_mapping"));
    }
    edit(it->second);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<QuantizationConfigOptions> CloneAndEditWeightAttribute(
    const QuantizationConfigOptions& options,
    const std::vector<std::string>& attrs, const AttrEdit& edit) {
  QuantizationConfigOptions out = options;
  for (auto& c : *out.mutable_quantization_configurations()) {
    absl::Status s = EditAttrs(c, attrs, edit);
    if (!s.ok()) return s;
  }
  if (out.has_base_config()) {
    absl::Status s = EditAttrs(*out.mutable_base_config(), attrs, edit);
    if (!s.ok()) return s;
  }
  return out;
}

OperatorsSet MakeOpSet(const std::string& name,
                       std::optional<QuantizationConfigOptions> qc_options) {
  OperatorsSet s;
  s.set_name(name);
  if (qc_options) *s.mutable_qc_options() = *qc_options;
  return s;
}

FusingGroup Single(const OperatorsSet& set) {
  FusingGroup g;
  *g.mutable_operators_set() = set;
  return g;
}

FusingGroup Group(const std::vector<OperatorsSet>& sets) {
  FusingGroup g;
  std::vector<std::string> names;
  for (const auto& s : sets) {
    *g.mutable_operator_set_group()->add_operators_set() = s;
    names.push_back(s.name());
  }
  g.mutable_operator_set_group()->set_name(absl::StrJoin(names, "_"));
  return g;
}

std::string FusingGroupName(const FusingGroup& group) {
  if (group.has_operators_set()) return group.operators_set().name();
  if (group.operator_set_group().has_name()) {
    return group.operator_set_group().name();
  }
  std::vector<std::string> names;
  for (const auto& s : group.operator_set_group().operators_set()) {
    names.push_back(s.name());
  }
  return absl::StrJoin(names, "_");
}

quantd::v1::Fusing MakeFusing(const std::vector<FusingGroup>& groups) {
  quantd::v1::Fusing f;
  std::vector<std::string> names;
  for (const auto& g : groups) {
    *f.add_operator_groups() = g;
    names.push_back(FusingGroupName(g));
  }
  f.set_name(absl::StrJoin(names, "_"));
  return f;
}

}  // namespace quantd::tpc
