#include "core/tpc/validation.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tpc/operator_set_names.h"
#include "google/protobuf/util/message_differencer.h"

namespace quantd::tpc {
namespace {

using google::protobuf::util::MessageDifferencer;
using quantd::v1::AttributeQuantizationConfig;
using quantd::v1::OperatorsSet;
using quantd::v1::OpQuantizationConfig;
using quantd::v1::QuantizationConfigOptions;
using quantd::v1::TargetPlatformCapabilities;

// The quantizers' widest grid; MCT's float bit width (32) is allowed only
// where quantization is disabled.
constexpr int kMaxQuantizedBits = 16;
constexpr int kMaxInputBits = 32;

class Checker {
 public:
  Checker(const ValidationOptions& options) : options_(options) {}

  std::vector<std::string> errors;
  std::vector<std::string> warnings;

  void Error(const std::string& path, const std::string& message) {
    errors.push_back(absl::StrCat(path, ": ", message));
  }

  void CheckAttr(const AttributeQuantizationConfig& a,
                 const std::string& path) {
    if (!quantd::v1::QuantizationMethod_IsValid(
            a.weights_quantization_method())) {
      Error(path + ".weights_quantization_method",
            absl::StrCat("unknown quantization method ",
                         a.weights_quantization_method()));
    }
    if (a.weights_n_bits() <= 0) {
      Error(path + ".weights_n_bits",
            absl::StrCat("must be positive, got ", a.weights_n_bits()));
    } else if (a.enable_weights_quantization() &&
               a.weights_n_bits() > kMaxQuantizedBits) {
      // The quantizers stop at 16 bits: more would silently keep floats.
      Error(path + ".weights_n_bits",
            absl::StrCat(a.weights_n_bits(), " is over ", kMaxQuantizedBits,
                         " bits (quantized weights)"));
    }
    if (a.has_lut_values_bitwidth() && a.lut_values_bitwidth() <= 0) {
      Error(path + ".lut_values_bitwidth",
            absl::StrCat("must be positive, got ", a.lut_values_bitwidth()));
    }
  }

  void CheckConfig(const OpQuantizationConfig& c, const std::string& path) {
    CheckAttr(c.default_weight_attr_config(),
              path + ".default_weight_attr_config");
    for (const auto& [name, attr] : c.attr_weights_configs_mapping()) {
      if (name.empty()) {
        Error(path + ".attr_weights_configs_mapping", "empty attribute name");
      }
      CheckAttr(attr, absl::StrCat(path, ".attr_weights_configs_mapping[\"",
                                   name, "\"]"));
    }
    if (!quantd::v1::QuantizationMethod_IsValid(
            c.activation_quantization_method())) {
      Error(path + ".activation_quantization_method",
            absl::StrCat("unknown quantization method ",
                         c.activation_quantization_method()));
    }
    if (c.activation_n_bits() <= 0) {
      Error(path + ".activation_n_bits",
            absl::StrCat("must be positive, got ", c.activation_n_bits()));
    } else if (c.enable_activation_quantization() &&
               c.activation_n_bits() > kMaxQuantizedBits) {
      Error(path + ".activation_n_bits",
            absl::StrCat(c.activation_n_bits(), " is over ", kMaxQuantizedBits,
                         " bits (quantized activations)"));
    }
    if (c.supported_input_activation_n_bits().empty()) {
      Error(path + ".supported_input_activation_n_bits",
            "must list at least one bit width");
    }
    for (int i = 0; i < c.supported_input_activation_n_bits_size(); ++i) {
      if (c.supported_input_activation_n_bits(i) <= 0) {
        Error(absl::StrCat(path, ".supported_input_activation_n_bits[", i, "]"),
              absl::StrCat("must be positive, got ",
                           c.supported_input_activation_n_bits(i)));
      } else if (c.supported_input_activation_n_bits(i) > kMaxInputBits) {
        Error(absl::StrCat(path, ".supported_input_activation_n_bits[", i, "]"),
              absl::StrCat(c.supported_input_activation_n_bits(i), " is over ",
                           kMaxInputBits, " bits"));
      }
    }
    if (c.enable_activation_quantization() && c.quantization_preserving()) {
      const std::string message =
          "enable_activation_quantization and quantization_preserving are "
          "both true";
      if (options_.strict) {
        Error(path, message);
      } else {
        warnings.push_back(absl::StrCat(path, ": ", message));
      }
    }
    if (c.has_simd_size() && c.simd_size() <= 0) {
      Error(path + ".simd_size",
            absl::StrCat("must be positive, got ", c.simd_size()));
    }
    if (!quantd::v1::Signedness_IsValid(c.signedness())) {
      Error(path + ".signedness",
            absl::StrCat("unknown signedness ", c.signedness()));
    }
  }

  void CheckQco(const QuantizationConfigOptions& q, const std::string& path) {
    const int n = q.quantization_configurations_size();
    if (n == 0) {
      Error(path, "no quantization_configurations (at least one is required)");
    }
    for (int i = 0; i < n; ++i) {
      CheckConfig(q.quantization_configurations(i),
                  absl::StrCat(path, ".quantization_configurations[", i, "]"));
    }
    if (!q.has_base_config()) {
      if (n > 1) {
        Error(path, absl::StrCat(n, " configurations but no base_config"));
      }
      return;
    }
    bool found = false;
    for (const auto& c : q.quantization_configurations()) {
      found = found || MessageDifferencer::Equals(c, q.base_config());
    }
    // A base equal to a configuration was checked with it.
    if (n > 0 && !found) {
      Error(path + ".base_config", "is not one of quantization_configurations");
      CheckConfig(q.base_config(), path + ".base_config");
    }
  }

  static std::string OpSetPath(const std::string& prefix,
                               const OperatorsSet& s) {
    return absl::StrCat(prefix, " (\"", s.name(), "\")");
  }

  void CheckOpSet(const OperatorsSet& s, const std::string& path) {
    if (s.name().empty()) Error(path, "empty operator set name");
    if (s.has_qc_options()) CheckQco(s.qc_options(), path + ".qc_options");
  }

 private:
  ValidationOptions options_;
};

Checker Run(const TargetPlatformCapabilities& tpc,
            const ValidationOptions& options) {
  Checker c(options);
  if (tpc.schema_version() != 1 && tpc.schema_version() != 2) {
    c.Error("schema_version",
            absl::StrCat("must be 1 or 2, got ", tpc.schema_version()));
  }
  if (!tpc.has_default_qco()) {
    c.Error("default_qco", "missing");
  } else {
    c.CheckQco(tpc.default_qco(), "default_qco");
    if (tpc.default_qco().quantization_configurations_size() > 1) {
      c.Error(
          "default_qco",
          absl::StrCat("must contain exactly one configuration, got ",
                       tpc.default_qco().quantization_configurations_size()));
    }
  }
  std::set<std::string> names;
  for (int i = 0; i < tpc.operator_set_size(); ++i) {
    const auto& s = tpc.operator_set(i);
    const std::string path =
        Checker::OpSetPath(absl::StrCat("operator_set[", i, "]"), s);
    c.CheckOpSet(s, path);
    if (!names.insert(s.name()).second) {
      c.Error(path, "duplicate operator set name (names must be unique)");
    }
    if (!s.name().empty() &&
        !IsStandardOperatorSetName(s.name(), tpc.schema_version())) {
      c.warnings.push_back(absl::StrCat(
          path,
          ": custom operator set name (not in MCT's OperatorSetNames); "
          "it needs a request-supplied ONNX mapping"));
    }
  }
  if (tpc.schema_version() == 1 && tpc.insert_preserving_quantizers()) {
    c.Error("insert_preserving_quantizers", "not part of schema version 1");
  }
  for (int i = 0; i < tpc.fusing_patterns_size(); ++i) {
    const auto& f = tpc.fusing_patterns(i);
    const std::string path =
        absl::StrCat("fusing_patterns[", i, "]",
                     f.has_name() ? " (\"" + f.name() + "\")" : "");
    if (f.operator_groups_size() < 2) {
      c.Error(path, absl::StrCat("has ", f.operator_groups_size(),
                                 " operator groups; fusing needs at least 2"));
    }
    for (int g = 0; g < f.operator_groups_size(); ++g) {
      const auto& group = f.operator_groups(g);
      const std::string gpath = absl::StrCat(path, ".operator_groups[", g, "]");
      std::vector<const OperatorsSet*> members;
      if (group.has_operators_set()) {
        members.push_back(&group.operators_set());
      } else if (group.has_operator_set_group()) {
        if (group.operator_set_group().operators_set_size() == 0) {
          c.Error(gpath, "operator set group has no operator sets");
        }
        for (const auto& s : group.operator_set_group().operators_set()) {
          members.push_back(&s);
        }
      } else {
        c.Error(gpath, "neither an operator set nor an operator set group");
      }
      for (size_t m = 0; m < members.size(); ++m) {
        const std::string mpath =
            group.has_operators_set()
                ? Checker::OpSetPath(gpath, *members[m])
                : Checker::OpSetPath(
                      absl::StrCat(gpath, ".operators_set[", m, "]"),
                      *members[m]);
        c.CheckOpSet(*members[m], mpath);
        if (!members[m]->name().empty() && !names.count(members[m]->name())) {
          c.Error(mpath,
                  "refers to an operator set that is not in operator_set");
        }
      }
    }
    if (f.has_fuse_op_quantization_config()) {
      if (tpc.schema_version() == 1) {
        c.Error(path + ".fuse_op_quantization_config",
                "not part of schema version 1");
      }
      c.CheckConfig(f.fuse_op_quantization_config(),
                    path + ".fuse_op_quantization_config");
    }
  }
  return c;
}

}  // namespace

std::vector<std::string> TpcErrors(const TargetPlatformCapabilities& tpc,
                                   const ValidationOptions& options) {
  return Run(tpc, options).errors;
}

std::vector<std::string> TpcWarnings(const TargetPlatformCapabilities& tpc) {
  return Run(tpc, {}).warnings;
}

absl::Status ValidateTpc(const TargetPlatformCapabilities& tpc,
                         const ValidationOptions& options) {
  std::vector<std::string> errors = TpcErrors(tpc, options);
  if (errors.empty()) return absl::OkStatus();
  const std::string name = tpc.has_name() ? tpc.name() : "<unnamed>";
  return absl::InvalidArgumentError(
      absl::StrCat("invalid TPC '", name, "' (", errors.size(), " errors):\n  ",
                   absl::StrJoin(errors, "\n  ")));
}

}  // namespace quantd::tpc
