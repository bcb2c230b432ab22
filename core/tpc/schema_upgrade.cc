#include "core/tpc/schema_upgrade.h"

namespace quantd::tpc {

void UpgradeToV2(quantd::v1::TargetPlatformCapabilities& tpc) {
  if (tpc.schema_version() >= kCurrentSchemaVersion) return;
  tpc.set_insert_preserving_quantizers(false);
  quantd::v1::OpQuantizationConfig fuse_config;
  if (tpc.default_qco().has_base_config()) {
    fuse_config = tpc.default_qco().base_config();
  } else if (tpc.default_qco().quantization_configurations_size() > 0) {
    fuse_config = tpc.default_qco().quantization_configurations(0);
  }
  fuse_config.set_enable_activation_quantization(false);
  for (auto& fusing : *tpc.mutable_fusing_patterns()) {
    *fusing.mutable_fuse_op_quantization_config() = fuse_config;
  }
  tpc.set_schema_version(kCurrentSchemaVersion);
}

}  // namespace quantd::tpc
