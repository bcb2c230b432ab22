#include "clients/batch/mixed_precision_flags.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace quantd {
namespace {

// type:OP | name:NODE | scope:SUBSTRING, each with a non-empty value.
bool ParseNodeFilter(absl::string_view text, v1::NodeFilter* filter) {
  absl::string_view value = text;
  if (absl::ConsumePrefix(&value, "type:") && !value.empty()) {
    filter->set_node_type(std::string(value));
  } else if (value = text;
             absl::ConsumePrefix(&value, "name:") && !value.empty()) {
    filter->set_node_name(std::string(value));
  } else if (value = text;
             absl::ConsumePrefix(&value, "scope:") && !value.empty()) {
    filter->set_name_scope(std::string(value));
  } else {
    return false;
  }
  return true;
}

}  // namespace

absl::Status ParseMixedPrecisionTargets(absl::string_view spec,
                                        v1::MixedPrecisionConfig* mp) {
  if (spec.empty()) {
    return absl::InvalidArgumentError("--mp: empty (e.g. weights=0.6)");
  }
  std::set<std::string> keys;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    std::vector<std::string> kv = absl::StrSplit(part, '=');
    double v = 0;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &v) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mp: '", part, "' is not KEY=NUMBER"));
    }
    const std::string& key = kv[0];
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mp: '", key, "' is given more than once; give each target once"));
    }
    v1::ResourceUtilization* frac = mp->mutable_target_fraction();
    v1::ResourceUtilization* abs = mp->mutable_target();
    const bool fraction = key == "weights" || key == "activation" ||
                          key == "total" || key == "bops";
    if (fraction && !(v > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mp: '", part, "': a fraction must be > 0"));
    }
    if (!fraction && v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mp: '", part, "': an absolute target must be >= 0"));
    }
    if (key == "weights") {
      frac->set_weights_memory_bytes(v);
    } else if (key == "activation") {
      frac->set_activation_memory_bytes(v);
    } else if (key == "total") {
      frac->set_total_memory_bytes(v);
    } else if (key == "bops") {
      frac->set_bops(v);
    } else if (key == "weights_bytes") {
      abs->set_weights_memory_bytes(v);
    } else if (key == "activation_bytes") {
      abs->set_activation_memory_bytes(v);
    } else if (key == "total_bytes") {
      abs->set_total_memory_bytes(v);
    } else if (key == "bops_count") {
      abs->set_bops(v);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mp: unknown target '", key,
          "' (fractions: weights, activation, total, bops; absolute: "
          "weights_bytes, activation_bytes, total_bytes, bops_count)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseBitWidthOverrides(absl::string_view spec,
                                    v1::MixedPrecisionConfig* mp) {
  if (spec.empty()) {
    return absl::InvalidArgumentError(
        "--bits-override: empty (e.g. type:Conv=4)");
  }
  std::set<std::string> filters;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    const size_t eq = part.rfind('=');
    int bits = 0;
    if (eq == absl::string_view::npos ||
        !absl::SimpleAtoi(part.substr(eq + 1), &bits) || bits <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--bits-override: '", part, "' is not FILTER[@TARGET]=BITS"));
    }
    absl::string_view filter = part.substr(0, eq);
    v1::BitWidthOverride o;
    o.set_bits(bits);
    o.set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
    if (absl::ConsumeSuffix(&filter, "@activation")) {
      o.set_target(v1::BitWidthOverride::TARGET_ACTIVATION);
    } else {
      absl::ConsumeSuffix(&filter, "@weights");
    }
    if (!ParseNodeFilter(filter, o.mutable_filter())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bits-override: '", part,
                       "': the filter must be type:OP, name:NODE or "
                       "scope:SUBSTRING"));
    }
    const std::string key = absl::StrCat(filter, "@", o.target());
    if (!filters.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bits-override: '", filter,
                       "' is given more than once for the same target"));
    }
    *mp->add_bit_width_overrides() = std::move(o);
  }
  return absl::OkStatus();
}

absl::Status ParseKeepFloat(absl::string_view spec,
                            v1::QuantizationConfig* config) {
  if (spec.empty()) {
    return absl::InvalidArgumentError(
        "--keep-float: empty (e.g. type:Softmax)");
  }
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    v1::NodeFilter filter;
    if (!ParseNodeFilter(part, &filter)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--keep-float: '", part,
                       "' is not type:OP, name:NODE or scope:SUBSTRING"));
    }
    *config->add_keep_float() = std::move(filter);
  }
  return absl::OkStatus();
}

}  // namespace quantd
