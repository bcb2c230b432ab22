// imx500@4.0 widened for activation mixed precision (MCT's activation-MP
// test TPCs do the same): every 8-bit output config of an operator set gets
// 4- and 2-bit twins, and every config accepts 2..16-bit inputs (so no
// consumer filters a candidate out). Shared by the tests of mp_stage_test.
#ifndef QUANTD_TESTS_CORE_PIPELINE_MIXED_PRECISION_ACTIVATION_MP_TPC_H_
#define QUANTD_TESTS_CORE_PIPELINE_MIXED_PRECISION_ACTIVATION_MP_TPC_H_

#include <vector>

#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd {

// Every config with a quantized output gets 4- and 2-bit activation twins
// (`twins`); every config (the base too) accepts 2..16-bit inputs.
inline void WidenActivationBits(v1::QuantizationConfigOptions* qco,
                                bool twins) {
  std::vector<v1::OpQuantizationConfig> extra;
  for (auto& c : *qco->mutable_quantization_configurations()) {
    c.clear_supported_input_activation_n_bits();
    for (int b : {2, 4, 8, 16}) c.add_supported_input_activation_n_bits(b);
    if (!twins || !c.enable_activation_quantization() ||
        c.activation_n_bits() != 8) {
      continue;
    }
    for (int b : {4, 2}) {
      v1::OpQuantizationConfig low = c;
      low.set_activation_n_bits(b);
      extra.push_back(low);
    }
  }
  for (auto& c : extra) *qco->add_quantization_configurations() = c;
  auto* base = qco->mutable_base_config();
  base->clear_supported_input_activation_n_bits();
  for (int b : {2, 4, 8, 16}) base->add_supported_input_activation_n_bits(b);
}

inline v1::TargetPlatformCapabilities ActivationMpTpc() {
  tpc::TpcRegistry registry;
  EXPECT_TRUE(registry.AddBuiltins().ok());
  auto base = registry.Resolve("imx500@4.0");
  EXPECT_TRUE(base.ok()) << base.status();
  v1::TargetPlatformCapabilities t = **base;
  t.set_name("imx500_activation_mp");
  // The default options must stay a single configuration.
  WidenActivationBits(t.mutable_default_qco(), /*twins=*/false);
  for (auto& s : *t.mutable_operator_set()) {
    if (s.has_qc_options()) WidenActivationBits(s.mutable_qc_options(), true);
  }
  return t;
}

}  // namespace quantd

#endif  // QUANTD_TESTS_CORE_PIPELINE_MIXED_PRECISION_ACTIVATION_MP_TPC_H_
