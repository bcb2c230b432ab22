// The names of a TPC's weight attributes (MCT's KERNEL_ATTR, BIAS_ATTR,
// POS_ATTR): the keys of attr_weights_configs_mapping, and the `attr` of a
// node's weight slots throughout the pipeline.
#ifndef QUANTD_CORE_TPC_ATTRIBUTE_NAMES_H_
#define QUANTD_CORE_TPC_ATTRIBUTE_NAMES_H_

namespace quantd::tpc {

inline constexpr char kKernelAttr[] = "kernel_attr";
inline constexpr char kBiasAttr[] = "bias_attr";
inline constexpr char kPosAttr[] = "pos_attr";

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_ATTRIBUTE_NAMES_H_
