// MCT's schema v1 -> v2 conversion (schema/schema_compatability.py).
#ifndef QUANTD_CORE_TPC_SCHEMA_UPGRADE_H_
#define QUANTD_CORE_TPC_SCHEMA_UPGRADE_H_

#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

inline constexpr int kCurrentSchemaVersion = 2;

// v1 -> v2: insert_preserving_quantizers = false and every fusing pattern gets
// fuse_op_quantization_config = the default config with activation
// quantization disabled (from default_qco.base_config). No-op for v2.
// Unlike MCT 2.4's _schema_v1_to_v2, name and is_simd_padding are kept: MCT
// drops them (they fall back to "default_tpc" / false), which loses data.
void UpgradeToV2(quantd::v1::TargetPlatformCapabilities& tpc);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_SCHEMA_UPGRADE_H_
