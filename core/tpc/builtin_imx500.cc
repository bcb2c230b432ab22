// IMX500 TPCs. Shared building blocks as in MCT's
// tpc_models/imx500_tpc/v1/tpc.py and tests/common_tests/helpers/
// tpcs_for_tests/{v1,v1_lut,v1_pot,v2,v2_lut,v3,v3_lut,v4}/tpc.py; 4.1 and 5.0
// follow edge-mdt-tpc as summarised in mct-reference §4.
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tpc/builder.h"
#include "core/tpc/builtins.h"

namespace quantd::tpc {
namespace {

using quantd::v1::OperatorsSet;
using quantd::v1::OpQuantizationConfig;
using quantd::v1::QuantizationConfigOptions;
using quantd::v1::TargetPlatformCapabilities;
namespace qv1 = quantd::v1;

constexpr auto kPot = qv1::QUANTIZATION_METHOD_POWER_OF_TWO;
constexpr auto kSym = qv1::QUANTIZATION_METHOD_SYMMETRIC;
constexpr auto kLutSym = qv1::QUANTIZATION_METHOD_LUT_SYM_QUANTIZER;

enum class KernelKind { kSymmetric, kLut, kPot };

struct OpConfigs {
  OpQuantizationConfig default_config;        // eight_bits_default
  OpQuantizationConfig linear_8;              // linear_eight_bits (MP base)
  std::vector<OpQuantizationConfig> mp_list;  // 8, 4, 2 bit kernels
};

OpQuantizationConfig MakeOpConfig(
    const qv1::AttributeQuantizationConfig& default_attr,
    std::map<std::string, qv1::AttributeQuantizationConfig> mapping) {
  OpQuantizationConfig c;
  *c.mutable_default_weight_attr_config() = default_attr;
  for (auto& [k, v] : mapping)
    (*c.mutable_attr_weights_configs_mapping())[k] = v;
  c.set_activation_quantization_method(kPot);
  c.set_activation_n_bits(8);
  c.add_supported_input_activation_n_bits(8);
  c.set_enable_activation_quantization(true);
  c.set_quantization_preserving(false);
  c.set_simd_size(32);
  c.set_signedness(qv1::SIGNEDNESS_AUTO);
  return c;
}

// get_op_quantization_configs() of the IMX500 tpc.py files.
OpConfigs GetOpConfigs(KernelKind kind) {
  const auto default_attr = MakeAttrConfig(kPot, 8, false, false);
  const auto kernel =
      MakeAttrConfig(kind == KernelKind::kPot ? kPot : kSym, 8, true, true);
  const auto bias = MakeAttrConfig(kPot, kFloatBitwidth, false, false);
  OpConfigs c;
  c.default_config = MakeOpConfig(default_attr, {});
  c.linear_8 =
      MakeOpConfig(default_attr, {{kKernelAttr, kernel}, {kBiasAttr, bias}});
  const auto low_bits = [&](int bits, int simd_factor) {
    return Must(CloneAndEdit(
        c.linear_8, [&](auto& q) { q.set_simd_size(32 * simd_factor); },
        {{kKernelAttr, [&](auto& a) {
            a.set_weights_n_bits(bits);
            if (kind == KernelKind::kLut) {
              a.set_weights_quantization_method(kLutSym);
            }
          }}}));
  };
  c.mp_list = {c.linear_8, low_bits(4, 2), low_bits(2, 4)};
  return c;
}

QuantizationConfigOptions Edit(const QuantizationConfigOptions& q,
                               const OpEdit& edit) {
  return CloneAndEdit(q, edit);
}

OpQuantizationConfig Edit(const OpQuantizationConfig& c, const OpEdit& edit) {
  return Must(CloneAndEdit(c, edit));
}

void SetInputBits(OpQuantizationConfig& c, std::vector<int> bits) {
  c.clear_supported_input_activation_n_bits();
  for (int b : bits) c.add_supported_input_activation_n_bits(b);
}

OpEdit To16BitSigned() {
  return [](OpQuantizationConfig& c) {
    c.set_activation_n_bits(16);
    c.set_signedness(qv1::SIGNEDNESS_SIGNED);
  };
}

// Default config with its default (constant) weight attribute quantized:
// MCT's const_config.
OpQuantizationConfig ConstConfig(const OpQuantizationConfig& default_config,
                                 bool per_channel, int bits = 8) {
  return Edit(default_config, [&](OpQuantizationConfig& c) {
    auto* a = c.mutable_default_weight_attr_config();
    a->set_enable_weights_quantization(true);
    a->set_weights_per_channel_threshold(per_channel);
    a->set_weights_quantization_method(kPot);
    a->set_weights_n_bits(bits);
  });
}

// [16-bit signed output, 8-bit] both accepting 8/16-bit inputs; base 8-bit.
QuantizationConfigOptions InOut16(const OpQuantizationConfig& config) {
  OpQuantizationConfig in16 = Edit(config, [](auto& c) {
    SetInputBits(c, {8, 16});
  });
  return MakeQco({Edit(in16, To16BitSigned()), in16}, in16);
}

// [8-bit, 16-bit signed] accepting 8/16-bit inputs; base 8-bit (v4's
// default_config_options_16bit).
QuantizationConfigOptions Default16(const OpQuantizationConfig& config) {
  OpQuantizationConfig in16 = Edit(config, [](auto& c) {
    SetInputBits(c, {8, 16});
  });
  return MakeQco({in16, Edit(in16, To16BitSigned())}, in16);
}

QuantizationConfigOptions NoQuantization(const QuantizationConfigOptions& base,
                                         std::vector<int> input_bits,
                                         bool preserving) {
  return Edit(base, [&](OpQuantizationConfig& c) {
    c.set_enable_activation_quantization(false);
    c.set_quantization_preserving(preserving);
    SetInputBits(c, input_bits);
  });
}

// Operator sets by name, kept so fusing patterns reuse the same objects.
class OpSets {
 public:
  const OperatorsSet& Add(const std::string& name,
                          std::optional<QuantizationConfigOptions> qco = {}) {
    sets_.push_back(MakeOpSet(name, std::move(qco)));
    return sets_.back();
  }
  const OperatorsSet& operator[](const std::string& name) const {
    for (const auto& s : sets_) {
      if (s.name() == name) return s;
    }
    std::abort();  // a typo in a built-in definition
  }
  std::vector<OperatorsSet> Of(const std::vector<std::string>& names) const {
    std::vector<OperatorsSet> out;
    for (const auto& n : names) out.push_back((*this)[n]);
    return out;
  }
  const std::vector<OperatorsSet>& all() const { return sets_; }

 private:
  std::vector<OperatorsSet> sets_;
};

TargetPlatformCapabilities Finish(const OpSets& sets,
                                  const QuantizationConfigOptions& default_qco,
                                  std::vector<qv1::Fusing> fusing,
                                  const std::string& name, int minor, int patch,
                                  bool add_metadata) {
  TargetPlatformCapabilities tpc;
  *tpc.mutable_default_qco() = default_qco;
  for (const auto& s : sets.all()) *tpc.add_operator_set() = s;
  for (auto& f : fusing) *tpc.add_fusing_patterns() = std::move(f);
  tpc.set_tpc_minor_version(minor);
  tpc.set_tpc_patch_version(patch);
  tpc.set_tpc_platform_type("imx500");
  tpc.set_add_metadata(add_metadata);
  tpc.set_name(name);
  tpc.set_is_simd_padding(true);
  tpc.set_schema_version(1);
  return tpc;
}

// The three IMX500 fusing patterns; v4 onwards adds Gelu / HardSigmoid (and
// Tanh after FullyConnected).
std::vector<qv1::Fusing> Imx500Fusing(const OpSets& s, bool v4) {
  std::vector<std::string> after_conv =
      v4 ? std::vector<std::string>{"ReLU",      "ReLU6",       "LeakyReLU",
                                    "HardTanh",  "Swish",       "Gelu",
                                    "HardSwish", "HardSigmoid", "PReLU",
                                    "Sigmoid",   "Tanh"}
         : std::vector<std::string>{"ReLU",     "ReLU6",   "LeakyReLU",
                                    "HardTanh", "Swish",   "HardSwish",
                                    "PReLU",    "Sigmoid", "Tanh"};
  std::vector<std::string> after_fc =
      v4 ? std::vector<std::string>{"ReLU",       "ReLU6", "LeakyReLU",
                                    "HardTanh",   "Swish", "Sigmoid",
                                    "Tanh",       "Gelu",  "HardSwish",
                                    "HardSigmoid"}
         : std::vector<std::string>{"ReLU",     "ReLU6", "LeakyReLU",
                                    "HardTanh", "Swish", "HardSwish",
                                    "Sigmoid"};
  return {
      MakeFusing({Group(s.Of({"Conv", "ConvTranspose", "DepthwiseConv2D"})),
                  Group(s.Of(after_conv))}),
      MakeFusing({Single(s["FullyConnected"]), Group(s.Of(after_fc))}),
      MakeFusing({Group(s.Of({"Add", "Sub", "Mul", "Div"})),
                  Group(s.Of({"ReLU", "ReLU6", "LeakyReLU", "HardTanh"}))}),
  };
}

// MCT's imx500 v1 (package) and the test tree's v1 / v1_lut / v1_pot / v2 /
// v2_lut: 8-bit everything, MP 8/4/2 kernels.
TargetPlatformCapabilities V1Family(KernelKind kind, bool with_batch_norm,
                                    const std::string& name, int minor,
                                    bool add_metadata) {
  const OpConfigs c = GetOpConfigs(kind);
  const auto default_qco = MakeQco({c.default_config});
  const auto mp = MakeQco(c.mp_list, c.linear_8);
  const auto no_quant = NoQuantization(default_qco, {8}, false);
  OpSets s;
  std::vector<std::string> no_quant_names = {"Stack",   "Unstack",    "Dropout",
                                             "Flatten", "SplitChunk", "GetItem",
                                             "Reshape", "Unsqueeze"};
  if (with_batch_norm) no_quant_names.push_back("BatchNorm");
  for (const char* n :
       {"Size", "Permute", "Transpose", "Equal", "ArgMax", "Gather", "TopK",
        "Squeeze", "MaxPool", "Pad", "ZeroPadding2D", "Cast",
        "CombinedNonMaxSuppression", "FakeQuant", "SSDPostProcess"}) {
    no_quant_names.push_back(n);
  }
  for (const auto& n : no_quant_names) s.Add(n, no_quant);
  for (const char* n :
       {"Conv", "ConvTranspose", "DepthwiseConv2D", "FullyConnected"}) {
    s.Add(n, mp);
  }
  for (const char* n :
       {"ReLU", "ReLU6", "LeakyReLU", "Add", "Sub", "Mul", "Div", "PReLU",
        "Swish", "HardSwish", "Sigmoid", "Tanh", "HardTanh"}) {
    s.Add(n);
  }
  return Finish(s, default_qco, Imx500Fusing(s, false), name, minor, 0,
                add_metadata);
}

// Test tree v3 / v3_lut: 16-bit support for Stack, Concatenate, Add, Sub, Mul.
TargetPlatformCapabilities V3(KernelKind kind, const std::string& name) {
  const OpConfigs c = GetOpConfigs(kind);
  const auto default_qco = MakeQco({c.default_config});
  const auto mp = MakeQco(c.mp_list, c.linear_8);
  const auto no_quant = NoQuantization(default_qco, {8, 16}, false);
  const OpQuantizationConfig const_config =
      ConstConfig(c.default_config, /*per_channel=*/true);
  const auto const_inout16 = InOut16(const_config);
  OpSets s;
  for (const char* n :
       {"Unstack",       "Dropout",      "Flatten",
        "SplitChunk",    "GetItem",      "Reshape",
        "Unsqueeze",     "BatchNorm",    "Size",
        "Permute",       "Transpose",    "Equal",
        "ArgMax",        "Gather",       "TopK",
        "Squeeze",       "MaxPool",      "Pad",
        "ZeroPadding2D", "Cast",         "CombinedNonMaxSuppression",
        "FakeQuant",     "StridedSlice", "SSDPostProcess"}) {
    s.Add(n, no_quant);
  }
  s.Add("Stack", const_inout16);
  s.Add("Concatenate", const_inout16);
  for (const char* n :
       {"Conv", "ConvTranspose", "DepthwiseConv2D", "FullyConnected"}) {
    s.Add(n, mp);
  }
  for (const char* n : {"ReLU", "ReLU6", "LeakyReLU"}) s.Add(n);
  for (const char* n : {"Add", "Sub", "Mul"}) s.Add(n, const_inout16);
  s.Add("Div", MakeQco({const_config}));
  for (const char* n :
       {"PReLU", "Swish", "HardSwish", "Sigmoid", "Tanh", "HardTanh"}) {
    s.Add(n);
  }
  return Finish(s, default_qco, Imx500Fusing(s, false), name, 3, 0, true);
}

enum class V4Edition { k4_0, k4_1, k5_0 };

// Test tree v4 (= 4.0), and edge-mdt-tpc's 4.1 / 5.0 deltas on top of it.
TargetPlatformCapabilities V4(V4Edition edition) {
  const bool v5 = edition == V4Edition::k5_0;
  const OpConfigs c = GetOpConfigs(KernelKind::kSymmetric);
  const auto default_qco = MakeQco({c.default_config});
  std::vector<OpQuantizationConfig> mp_list = c.mp_list;
  for (const auto& cfg : c.mp_list)
    mp_list.push_back(Edit(cfg, To16BitSigned()));
  const auto mp = MakeQco(mp_list, c.linear_8);
  const auto default_16 = Default16(c.default_config);
  const OpQuantizationConfig const_config =
      ConstConfig(c.default_config, /*per_channel=*/true);
  const OpQuantizationConfig const_per_tensor =
      ConstConfig(c.default_config, /*per_channel=*/false);
  const auto const_inout16 = InOut16(const_config);
  const auto const_inout16_per_tensor = InOut16(const_per_tensor);
  const auto qpreserving_const =
      MakeQco({Edit(const_per_tensor, [&](OpQuantizationConfig& q) {
        q.set_enable_activation_quantization(false);
        q.set_quantization_preserving(true);
        if (v5) SetInputBits(q, {8, 16});
      })});
  OpSets s;
  s.Add("Size", NoQuantization(default_qco, {8}, false));
  s.Add("Equal", NoQuantization(default_qco, {8}, false));
  s.Add("ArgMax", NoQuantization(default_qco, {8}, false));
  s.Add("TopK", NoQuantization(default_qco, {8}, false));
  s.Add("CombinedNonMaxSuppression",
        NoQuantization(default_qco,
                       v5 ? std::vector<int>{8, 16} : std::vector<int>{8},
                       false));
  s.Add("FakeQuant", NoQuantization(default_qco, {8}, false));
  s.Add("SSDPostProcess", NoQuantization(default_qco, {8}, false));
  for (const char* n : {"Dropout", "MaxPool", "Pad", "ZeroPadding2D", "Cast"}) {
    s.Add(n, NoQuantization(default_qco, {8}, true));
  }
  for (const char* n :
       {"SplitChunk", "GetItem", "Unstack", "StridedSlice", "Flatten",
        "Reshape", "Unsqueeze", "Squeeze", "Permute", "Transpose"}) {
    s.Add(n, NoQuantization(default_qco, {8, 16}, true));
  }
  s.Add("Gather", qpreserving_const);
  s.Add("Expend", qpreserving_const);
  s.Add("Stack", const_inout16_per_tensor);
  s.Add("Concatenate", const_inout16_per_tensor);
  for (const char* n : {"BatchNorm", "Min", "Max"}) s.Add(n, default_16);
  for (const char* n :
       {"Conv", "ConvTranspose", "DepthwiseConv2D", "FullyConnected"}) {
    s.Add(n, mp);
  }
  for (const char* n : {"ReLU", "ReLU6", "LeakyReLU"}) s.Add(n, default_16);
  // 5.0: a constant (positional) input of Add/Sub/Mul is quantized 16-bit
  // PoT per-tensor.
  auto add_sub_mul = const_inout16;
  if (v5) {
    add_sub_mul = Edit(const_inout16, [](OpQuantizationConfig& q) {
      (*q.mutable_attr_weights_configs_mapping())[kPosAttr] =
          MakeAttrConfig(kPot, 16, false, true);
    });
  }
  for (const char* n : {"Add", "Sub", "Mul"}) s.Add(n, add_sub_mul);
  s.Add("Div", MakeQco({const_config}));
  for (const char* n : {"PReLU", "Swish", "HardSwish"}) s.Add(n, default_16);
  if (edition == V4Edition::k4_0) {
    s.Add("Sigmoid", default_16);
  } else {
    // 4.1: Sigmoid is 8-bit only (still accepting 16-bit inputs).
    s.Add("Sigmoid", MakeQco({default_16.base_config()}));
  }
  for (const char* n : {"Tanh", "Gelu", "HardSigmoid", "HardTanh"}) {
    s.Add(n, default_16);
  }
  if (v5) {
    for (const char* n : {"Exp", "Sin", "Cos"}) s.Add(n, const_inout16);
  }
  TargetPlatformCapabilities tpc =
      Finish(s, default_qco, Imx500Fusing(s, true), "imx500_tpc", v5 ? 5 : 4,
             edition == V4Edition::k4_1 ? 1 : 0, true);
  if (v5) {
    // Native schema v2: inner fused outputs stay unquantized, as v1 implied.
    tpc.set_schema_version(2);
    tpc.set_insert_preserving_quantizers(false);
    OpQuantizationConfig fuse = c.default_config;
    fuse.set_enable_activation_quantization(false);
    for (auto& f : *tpc.mutable_fusing_patterns()) {
      *f.mutable_fuse_op_quantization_config() = fuse;
    }
  }
  return tpc;
}

}  // namespace

TargetPlatformCapabilities Imx500Tpc(const std::string& variant) {
  TargetPlatformCapabilities tpc;
  if (variant == "1.0") {
    // MCT's package TPC (imx500.json): no BatchNorm op set, no metadata.
    tpc = V1Family(KernelKind::kSymmetric, false, "imx500_tpc", 1, false);
  } else if (variant == "1.0_lut") {
    tpc = V1Family(KernelKind::kLut, true, "imx500_lut_tpc", 2, true);
  } else if (variant == "1.0_pot") {
    tpc = V1Family(KernelKind::kPot, true, "imx500_pot_tpc", 2, true);
  } else if (variant == "2.0") {
    tpc = V1Family(KernelKind::kSymmetric, true, "imx500_tpc", 2, true);
  } else if (variant == "2.0_lut") {
    tpc = V1Family(KernelKind::kLut, true, "imx500_lut_tpc", 2, true);
  } else if (variant == "3.0") {
    tpc = V3(KernelKind::kSymmetric, "imx500_tpc");
  } else if (variant == "3.0_lut") {
    tpc = V3(KernelKind::kLut, "imx500_lut_tpc");
  } else if (variant == "4.0") {
    tpc = V4(V4Edition::k4_0);
  } else if (variant == "4.1") {
    tpc = V4(V4Edition::k4_1);
  } else if (variant == "5.0") {
    tpc = V4(V4Edition::k5_0);
  } else {
    std::abort();  // BuiltinTpcs() lists the variants
  }
  tpc.set_version(variant);
  return tpc;
}

}  // namespace quantd::tpc
