// The built-in TPC library, written the way MCT's tpc.py files build them.
// Each entry's source is documented in docs/tpc.md; the ones that come from
// an MCT-exported JSON fixture equal it field by field (tested).
#ifndef QUANTD_CORE_TPC_BUILTINS_H_
#define QUANTD_CORE_TPC_BUILTINS_H_

#include <string>
#include <vector>

#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

struct BuiltinTpc {
  std::string name;     // registry name: "imx500", "tflite", "qnnpack"
  std::string version;  // "1.0", "1.0_lut", ...
  quantd::v1::TargetPlatformCapabilities tpc;  // tpc.version() == version
};

// Every built-in, in a stable order.
std::vector<BuiltinTpc> BuiltinTpcs();

// Per-platform builders (builtin_<platform>.cc). `variant` is the version
// key, e.g. "1.0_lut".
quantd::v1::TargetPlatformCapabilities Imx500Tpc(const std::string& variant);
quantd::v1::TargetPlatformCapabilities TfliteTpc();
quantd::v1::TargetPlatformCapabilities QnnpackTpc(bool assign_linear_8bit);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_BUILTINS_H_
