// Bit-widths read off a TPC OpQuantizationConfig, shared by the TPC
// attachment (attach.cc) and the mixed-precision candidate filter, which
// must apply the same rules.
#ifndef QUANTD_CORE_PIPELINE_PREP_OP_CONFIG_BITS_H_
#define QUANTD_CORE_PIPELINE_PREP_OP_CONFIG_BITS_H_

#include "quantd/v1/tpc.pb.h"

namespace quantd {

// Weight configs of more than 16 bits are MCT's FLOAT_BITWIDTH (32): float.
inline constexpr int kMaxWeightBits = 16;

// The kernel attribute's weights bits; 0 when the config has no kernel
// config or does not quantize it.
int KernelBits(const v1::OpQuantizationConfig& c);

// The widest input activation the op accepts: the largest of
// supported_input_activation_n_bits, or its own activation bits when the
// list is empty.
int MaxSupportedInputBits(const v1::OpQuantizationConfig& c);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_OP_CONFIG_BITS_H_
