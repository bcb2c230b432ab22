#include "core/tpc/builtins.h"

namespace quantd::tpc {

std::vector<BuiltinTpc> BuiltinTpcs() {
  std::vector<BuiltinTpc> out;
  for (const char* v : {"1.0", "1.0_lut", "1.0_pot", "2.0", "2.0_lut", "3.0",
                        "3.0_lut", "4.0", "4.1", "5.0"}) {
    out.push_back({"imx500", v, Imx500Tpc(v)});
  }
  out.push_back({"tflite", "1.0", TfliteTpc()});
  out.push_back({"qnnpack", "1.0", QnnpackTpc(false)});
  out.push_back({"qnnpack", "1.0_w8", QnnpackTpc(true)});
  return out;
}

}  // namespace quantd::tpc
