#include "core/pipeline/prep/op_config_bits.h"

#include <algorithm>

#include "core/tpc/attribute_names.h"

namespace quantd {

int KernelBits(const v1::OpQuantizationConfig& c) {
  auto it = c.attr_weights_configs_mapping().find(tpc::kKernelAttr);
  if (it == c.attr_weights_configs_mapping().end() ||
      !it->second.enable_weights_quantization()) {
    return 0;
  }
  return it->second.weights_n_bits();
}

int MaxSupportedInputBits(const v1::OpQuantizationConfig& c) {
  int m = 0;
  for (int b : c.supported_input_activation_n_bits()) m = std::max(m, b);
  return m == 0 ? c.activation_n_bits() : m;
}

}  // namespace quantd
