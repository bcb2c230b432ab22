// MCT's TFLite TPC as MCT v2.3.0 exports it (tflite.json;
// tpc_models/tflite_tpc/v1/tpc.py).
#include "core/tpc/builder.h"
#include "core/tpc/builtins.h"

namespace quantd::tpc {
namespace {

namespace qv1 = quantd::v1;

qv1::OpQuantizationConfig DefaultConfig() {
  qv1::OpQuantizationConfig c;
  *c.mutable_default_weight_attr_config() =
      MakeAttrConfig(qv1::QUANTIZATION_METHOD_SYMMETRIC, 8, false, false);
  c.set_activation_quantization_method(qv1::QUANTIZATION_METHOD_POWER_OF_TWO);
  c.set_activation_n_bits(8);
  c.add_supported_input_activation_n_bits(8);
  c.set_enable_activation_quantization(true);
  c.set_quantization_preserving(false);
  c.set_simd_size(32);
  c.set_signedness(qv1::SIGNEDNESS_AUTO);
  return c;
}

// Default config with MCT's stored-but-unused fixed quantization parameters.
qv1::QuantizationConfigOptions Fixed(const qv1::OpQuantizationConfig& base,
                                     double scale, int zero_point) {
  return MakeQco({Must(CloneAndEdit(base, [&](qv1::OpQuantizationConfig& c) {
    c.set_fixed_scale(scale);
    c.set_fixed_zero_point(zero_point);
  }))});
}

}  // namespace

qv1::TargetPlatformCapabilities TfliteTpc() {
  const qv1::OpQuantizationConfig default_config = DefaultConfig();
  const auto default_qco = MakeQco({default_config});
  // MCT's TFLite TPC keeps activation quantization enabled on its
  // quantization-preserving sets (ValidateTpc warns about it).
  const auto preserving = CloneAndEdit(
      default_qco, [](auto& c) { c.set_quantization_preserving(true); });
  qv1::TargetPlatformCapabilities tpc;
  *tpc.mutable_default_qco() = default_qco;
  std::map<std::string, qv1::OperatorsSet> sets;
  const auto add = [&](const std::string& name,
                       std::optional<qv1::QuantizationConfigOptions> qco) {
    sets[name] = MakeOpSet(name, std::move(qco));
    *tpc.add_operator_set() = sets[name];
  };
  for (const char* n : {"Unstack", "Transpose", "Gather", "Reshape", "MaxPool",
                        "AvgPool", "StridedSlice", "Concatenate", "Mul", "Min",
                        "Max", "ZeroPadding2D", "Resize", "Pad", "Fold"}) {
    add(n, preserving);
  }
  add("L2Norm", Fixed(default_config, 1.0 / 128, 0));
  add("LogSoftmax", Fixed(default_config, 16.0 / 256, 127));
  add("Softmax", Fixed(default_config, 1.0 / 256, -128));
  add("FullyConnected", default_qco);
  add("Conv", std::nullopt);
  add("ReLU", std::nullopt);
  add("ReLU6", std::nullopt);
  add("Tanh", Fixed(default_config, 1.0 / 256, -128));
  add("Sigmoid", default_qco);
  for (const char* n : {"BatchNorm", "Add", "AddBias", "Elu"}) {
    add(n, std::nullopt);
  }
  add("Squeeze", preserving);

  const auto relu_elu = Group({sets["ReLU"], sets["Elu"]});
  const auto conv_fc = Group({sets["Conv"], sets["FullyConnected"]});
  for (const auto& pattern : std::vector<std::vector<qv1::FusingGroup>>{
           {conv_fc, Single(sets["AddBias"])},
           {conv_fc, Single(sets["AddBias"]), relu_elu},
           {Single(sets["Conv"]), Single(sets["BatchNorm"]), relu_elu},
           {Single(sets["Conv"]), Single(sets["Squeeze"]), relu_elu},
           {Single(sets["BatchNorm"]), relu_elu},
           {Single(sets["BatchNorm"]), Single(sets["Add"]), relu_elu}}) {
    *tpc.add_fusing_patterns() = MakeFusing(pattern);
  }
  tpc.set_tpc_minor_version(1);
  tpc.set_tpc_patch_version(0);
  tpc.set_tpc_platform_type("tflite");
  tpc.set_add_metadata(false);
  tpc.set_name("tflite_tpc");
  tpc.set_is_simd_padding(false);
  tpc.set_schema_version(1);
  tpc.set_version("1.0");
  return tpc;
}

}  // namespace quantd::tpc
