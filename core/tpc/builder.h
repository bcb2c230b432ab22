// Helpers to build TPCs in C++ the way MCT's tpc.py files do
// (clone_and_edit on OpQuantizationConfig and QuantizationConfigOptions).
//
//   auto four_bits = CloneAndEdit(linear_8,
//       [](auto& c) { c.set_simd_size(64); },
//       {{kKernelAttr, [](auto& a) { a.set_weights_n_bits(4); }}});
#ifndef QUANTD_CORE_TPC_BUILDER_H_
#define QUANTD_CORE_TPC_BUILDER_H_

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tpc/attribute_names.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

// MCT's FLOAT_BITWIDTH: weights left in float.
inline constexpr int kFloatBitwidth = 32;

using OpEdit = std::function<void(quantd::v1::OpQuantizationConfig&)>;
using AttrEdit = std::function<void(quantd::v1::AttributeQuantizationConfig&)>;

quantd::v1::AttributeQuantizationConfig MakeAttrConfig(
    quantd::v1::QuantizationMethod method, int n_bits, bool per_channel,
    bool enabled, std::optional<int> lut_values_bitwidth = std::nullopt);

// Copy of `config` with `edit` applied, then each attr_to_edit entry applied
// to that attribute's config. An attribute missing from the mapping is an
// error (as in MCT).
absl::StatusOr<quantd::v1::OpQuantizationConfig> CloneAndEdit(
    const quantd::v1::OpQuantizationConfig& config, const OpEdit& edit,
    const std::map<std::string, AttrEdit>& attr_to_edit = {});

// Builds options; without base_config a single configuration becomes its own
// base (MCT's rule). Does not validate: see ValidateTpc.
quantd::v1::QuantizationConfigOptions MakeQco(
    const std::vector<quantd::v1::OpQuantizationConfig>& configs,
    std::optional<quantd::v1::OpQuantizationConfig> base = std::nullopt);

// Applies `edit` to every configuration and the base config.
quantd::v1::QuantizationConfigOptions CloneAndEdit(
    const quantd::v1::QuantizationConfigOptions& options, const OpEdit& edit);

// Applies `edit` to the listed weight attributes of every configuration and
// the base; `attrs` empty means every mapped attribute (MCT's attrs=None).
absl::StatusOr<quantd::v1::QuantizationConfigOptions>
CloneAndEditWeightAttribute(
    const quantd::v1::QuantizationConfigOptions& options,
    const std::vector<std::string>& attrs, const AttrEdit& edit);

quantd::v1::OperatorsSet MakeOpSet(
    const std::string& name,
    std::optional<quantd::v1::QuantizationConfigOptions> qc_options =
        std::nullopt);

// A fusing position: one set, or a group of sets named by joining with "_".
quantd::v1::FusingGroup Single(const quantd::v1::OperatorsSet& set);
quantd::v1::FusingGroup Group(
    const std::vector<quantd::v1::OperatorsSet>& sets);

// A fusing pattern named by joining its positions' names with "_".
quantd::v1::Fusing MakeFusing(
    const std::vector<quantd::v1::FusingGroup>& groups);

// Name of a fusing position (set name or group name).
std::string FusingGroupName(const quantd::v1::FusingGroup& group);

// Value of something that cannot fail in a built-in definition.
template <typename T>
T Must(absl::StatusOr<T> value) {
  if (!value.ok()) std::abort();
  return *std::move(value);
}

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_BUILDER_H_
