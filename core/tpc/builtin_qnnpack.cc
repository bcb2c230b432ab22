// MCT's QNNPACK TPC (tpc_models/qnnpack_tpc/v1/tpc.py). As MCT v2.3.0
// exports it (qnnpack.json) no operator set has qc_options, so the
// `linear_eight_bits` config the file defines is never used and weights are
// never quantized. assign_linear_8bit gives the intended variant
// (qnnpack@1.0_w8, docs/tpc.md).
#include "core/tpc/builder.h"
#include "core/tpc/builtins.h"

namespace quantd::tpc {

namespace qv1 = quantd::v1;

qv1::TargetPlatformCapabilities QnnpackTpc(bool assign_linear_8bit) {
  qv1::OpQuantizationConfig default_config;
  *default_config.mutable_default_weight_attr_config() =
      MakeAttrConfig(qv1::QUANTIZATION_METHOD_SYMMETRIC, 8, false, false);
  default_config.set_activation_quantization_method(
      qv1::QUANTIZATION_METHOD_POWER_OF_TWO);
  default_config.set_activation_n_bits(8);
  default_config.add_supported_input_activation_n_bits(8);
  default_config.set_enable_activation_quantization(true);
  default_config.set_quantization_preserving(false);
  default_config.set_simd_size(32);
  default_config.set_signedness(qv1::SIGNEDNESS_AUTO);

  // linear_eight_bits: kernel symmetric 8-bit per-tensor, bias float,
  // activations uniform 8-bit.
  qv1::OpQuantizationConfig linear_8 = default_config;
  (*linear_8.mutable_attr_weights_configs_mapping())[kKernelAttr] =
      MakeAttrConfig(qv1::QUANTIZATION_METHOD_SYMMETRIC, 8, false, true);
  (*linear_8.mutable_attr_weights_configs_mapping())[kBiasAttr] =
      MakeAttrConfig(qv1::QUANTIZATION_METHOD_POWER_OF_TWO, kFloatBitwidth,
                     false, false);
  linear_8.set_activation_quantization_method(qv1::QUANTIZATION_METHOD_UNIFORM);
  std::optional<qv1::QuantizationConfigOptions> linear_qco;
  if (assign_linear_8bit) linear_qco = MakeQco({linear_8});

  qv1::TargetPlatformCapabilities tpc;
  *tpc.mutable_default_qco() = MakeQco({default_config});
  std::map<std::string, qv1::OperatorsSet> s;
  for (const char* n : {"Conv", "DepthwiseConv2D", "ConvTranspose", "BatchNorm",
                        "ReLU", "ReLU6", "HardTanh", "FullyConnected"}) {
    const std::string name = n;
    const bool linear = name == "Conv" || name == "DepthwiseConv2D" ||
                        name == "ConvTranspose" || name == "FullyConnected";
    s[name] = MakeOpSet(name, linear ? linear_qco : std::nullopt);
    *tpc.add_operator_set() = s[name];
  }
  const auto conv = Group({s["Conv"], s["ConvTranspose"]});
  const auto relu = Group({s["ReLU"], s["ReLU6"], s["HardTanh"]});
  *tpc.add_fusing_patterns() = MakeFusing({conv, Single(s["BatchNorm"]), relu});
  *tpc.add_fusing_patterns() = MakeFusing({conv, Single(s["BatchNorm"])});
  *tpc.add_fusing_patterns() = MakeFusing({conv, relu});
  *tpc.add_fusing_patterns() = MakeFusing({Single(s["FullyConnected"]), relu});
  tpc.set_tpc_minor_version(1);
  tpc.set_tpc_patch_version(0);
  tpc.set_tpc_platform_type("qnnpack");
  tpc.set_add_metadata(false);
  tpc.set_name("qnnpack_tpc");
  tpc.set_is_simd_padding(false);
  tpc.set_schema_version(1);
  tpc.set_version(assign_linear_8bit ? "1.0_w8" : "1.0");
  return tpc;
}

}  // namespace quantd::tpc
