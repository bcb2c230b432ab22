#include "core/tpc/tpc_summary.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/tpc/builder.h"
#include "google/protobuf/util/message_differencer.h"

namespace quantd::tpc {
namespace {

using quantd::v1::AttributeQuantizationConfig;
using quantd::v1::OpQuantizationConfig;
using quantd::v1::QuantizationConfigOptions;

std::string AttrSummary(const AttributeQuantizationConfig& a) {
  if (!a.enable_weights_quantization()) return "float";
  std::string s = absl::StrCat(
      MethodName(a.weights_quantization_method()), " ", a.weights_n_bits(),
      "b ", a.weights_per_channel_threshold() ? "per-channel" : "per-tensor");
  if (a.has_lut_values_bitwidth()) {
    absl::StrAppend(&s, " lut", a.lut_values_bitwidth());
  }
  return s;
}

void AppendQco(std::string& out, const QuantizationConfigOptions& q,
               const std::string& indent) {
  const int n = q.quantization_configurations_size();
  for (int i = 0; i < n; ++i) {
    const auto& c = q.quantization_configurations(i);
    const bool base =
        n > 1 && q.has_base_config() &&
        google::protobuf::util::MessageDifferencer::Equals(c, q.base_config());
    absl::StrAppend(&out, indent, base ? "* " : "- ", ConfigSummary(c), "\n");
  }
}

}  // namespace

std::string MethodName(quantd::v1::QuantizationMethod method) {
  switch (method) {
    case quantd::v1::QUANTIZATION_METHOD_POWER_OF_TWO:
      return "POT";
    case quantd::v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER:
      return "LUT_POT";
    case quantd::v1::QUANTIZATION_METHOD_SYMMETRIC:
      return "SYM";
    case quantd::v1::QUANTIZATION_METHOD_UNIFORM:
      return "UNIFORM";
    case quantd::v1::QUANTIZATION_METHOD_LUT_SYM_QUANTIZER:
      return "LUT_SYM";
    default:
      return absl::StrCat("method#", static_cast<int>(method));
  }
}

std::string ConfigSummary(const OpQuantizationConfig& c) {
  std::vector<std::string> parts;
  std::string act;
  if (c.quantization_preserving()) {
    act = "act preserving";
    if (c.enable_activation_quantization()) absl::StrAppend(&act, "+quantized");
  } else if (c.enable_activation_quantization()) {
    act = absl::StrCat("act ", MethodName(c.activation_quantization_method()),
                       " ", c.activation_n_bits(), "b");
  } else {
    act = "act off";
  }
  absl::StrAppend(&act, " in[",
                  absl::StrJoin(c.supported_input_activation_n_bits(), ","),
                  "]");
  if (c.signedness() == quantd::v1::SIGNEDNESS_SIGNED) {
    absl::StrAppend(&act, " signed");
  } else if (c.signedness() == quantd::v1::SIGNEDNESS_UNSIGNED) {
    absl::StrAppend(&act, " unsigned");
  }
  if (c.has_simd_size()) absl::StrAppend(&act, " simd", c.simd_size());
  if (c.has_fixed_scale() || c.has_fixed_zero_point()) {
    absl::StrAppend(
        &act, " fixed(scale=",
        c.has_fixed_scale() ? absl::StrCat(c.fixed_scale()) : "-", ", zp=",
        c.has_fixed_zero_point() ? absl::StrCat(c.fixed_zero_point()) : "-",
        ")");
  }
  parts.push_back(act);
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.attr_weights_configs_mapping()) keys.push_back(k);
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    // kernel, bias, pos first as MCT declares them.
    auto rank = [](const std::string& k) {
      return k == kKernelAttr ? 0 : k == kBiasAttr ? 1 : k == kPosAttr ? 2 : 3;
    };
    return std::make_pair(rank(a), a) < std::make_pair(rank(b), b);
  });
  for (const auto& k : keys) {
    std::string name = k;
    if (absl::EndsWith(name, "_attr")) name = name.substr(0, name.size() - 5);
    parts.push_back(absl::StrCat(
        name, " ", AttrSummary(c.attr_weights_configs_mapping().at(k))));
  }
  parts.push_back(absl::StrCat(keys.empty() ? "weights " : "other weights ",
                               AttrSummary(c.default_weight_attr_config())));
  return absl::StrJoin(parts, " | ");
}

std::string TpcSummary(const quantd::v1::TargetPlatformCapabilities& tpc) {
  std::string out;
  absl::StrAppend(
      &out, "name: ", tpc.has_name() ? tpc.name() : "(none)",
      tpc.version().empty() ? "" : absl::StrCat("   version: ", tpc.version()),
      "\nplatform: ",
      tpc.has_tpc_platform_type() ? tpc.tpc_platform_type() : "(none)",
      "   tpc_minor_version: ",
      tpc.has_tpc_minor_version() ? absl::StrCat(tpc.tpc_minor_version())
                                  : "null",
      "   tpc_patch_version: ",
      tpc.has_tpc_patch_version() ? absl::StrCat(tpc.tpc_patch_version())
                                  : "null",
      "\nschema: v", tpc.schema_version(),
      "   is_simd_padding: ", tpc.is_simd_padding() ? "true" : "false",
      "   add_metadata: ", tpc.add_metadata() ? "true" : "false");
  if (tpc.schema_version() >= 2) {
    absl::StrAppend(&out, "   insert_preserving_quantizers: ",
                    tpc.insert_preserving_quantizers() ? "true" : "false");
  }
  absl::StrAppend(&out, "\n\ndefault_qco:\n");
  AppendQco(out, tpc.default_qco(), "  ");
  absl::StrAppend(&out, "\noperator sets (", tpc.operator_set_size(),
                  "; * marks the base config):\n");
  for (const auto& s : tpc.operator_set()) {
    if (!s.has_qc_options()) {
      absl::StrAppend(&out, "  ", s.name(), ": default_qco\n");
      continue;
    }
    const int n = s.qc_options().quantization_configurations_size();
    absl::StrAppend(&out, "  ", s.name(), ": ", n,
                    n == 1 ? " configuration\n" : " configurations\n");
    AppendQco(out, s.qc_options(), "    ");
  }
  absl::StrAppend(&out, "\nfusing patterns (", tpc.fusing_patterns_size(),
                  "):\n");
  for (const auto& f : tpc.fusing_patterns()) {
    std::vector<std::string> groups;
    for (const auto& g : f.operator_groups()) {
      if (g.has_operators_set()) {
        groups.push_back(g.operators_set().name());
      } else {
        std::vector<std::string> names;
        for (const auto& s : g.operator_set_group().operators_set()) {
          names.push_back(s.name());
        }
        groups.push_back(absl::StrCat("[", absl::StrJoin(names, "|"), "]"));
      }
    }
    absl::StrAppend(&out, "  ", absl::StrJoin(groups, " -> "), "\n");
    if (f.has_fuse_op_quantization_config()) {
      absl::StrAppend(&out, "    fused outputs: ",
                      ConfigSummary(f.fuse_op_quantization_config()), "\n");
    }
  }
  return out;
}

}  // namespace quantd::tpc
