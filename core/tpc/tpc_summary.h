// Human-readable rendering of TPCs (for `quantctl tpc show` and diffs).
#ifndef QUANTD_CORE_TPC_TPC_SUMMARY_H_
#define QUANTD_CORE_TPC_TPC_SUMMARY_H_

#include <string>

#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

// "POT" for QUANTIZATION_METHOD_POWER_OF_TWO, etc.
std::string MethodName(quantd::v1::QuantizationMethod method);

// One line: "act POT 8b in[8,16] signed simd32 | kernel SYM 8b per-channel |
// bias float | other weights off".
std::string ConfigSummary(const quantd::v1::OpQuantizationConfig& config);

// Multi-line summary: header, default_qco, every op set with its
// configurations (base marked), fusing patterns.
std::string TpcSummary(const quantd::v1::TargetPlatformCapabilities& tpc);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_TPC_SUMMARY_H_
