#include "core/tpc/onnx_opset_mapping.h"

#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tpc/builder.h"
#include "core/tpc/layer_filter.h"
#include "google/protobuf/util/message_differencer.h"

namespace quantd::tpc {
namespace {

using quantd::v1::LayerFilter;
using quantd::v1::OpsetLayerMapping;
using quantd::v1::OpsetLayers;

OpsetLayers Entry(const std::string& opset, std::vector<LayerFilter> layers,
                  std::map<std::string, std::string> attrs = {}) {
  OpsetLayers e;
  e.set_opset(opset);
  for (auto& l : layers) *e.add_layers() = std::move(l);
  for (auto& [k, v] : attrs) (*e.mutable_attr_mapping())[k] = v;
  return e;
}

std::vector<LayerFilter> Types(std::vector<std::string> types) {
  std::vector<LayerFilter> out;
  for (auto& t : types) out.push_back(Filter(t));
  return out;
}

// Clip(min, max) with min/max as attributes (opset < 11) or constant scalar
// inputs 1 and 2 (opset >= 11).
quantd::v1::AttributeFilter ClipBounds(
    std::vector<std::function<quantd::v1::AttributeFilter(const std::string&)>>
        on_min,
    std::vector<std::function<quantd::v1::AttributeFilter(const std::string&)>>
        on_max) {
  std::vector<quantd::v1::AttributeFilter> as_attrs, as_inputs;
  for (auto& f : on_min) {
    as_attrs.push_back(f("min"));
    as_inputs.push_back(f("input1.value"));
  }
  for (auto& f : on_max) {
    as_attrs.push_back(f("max"));
    as_inputs.push_back(f("input2.value"));
  }
  return Or({And(std::move(as_attrs)), And(std::move(as_inputs))});
}

OpsetLayerMapping BuildDefault() {
  const std::map<std::string, std::string> kernel_bias = {{kKernelAttr, "1"},
                                                          {kBiasAttr, "2"}};
  const auto eq = [](double v) {
    return [v](const std::string& a) { return Eq(a, Float(v)); };
  };
  const auto ne = [](double v) {
    return [v](const std::string& a) { return NotEq(a, Float(v)); };
  };
  const auto const_weight = Eq("input1.is_const", Int(1));
  std::vector<OpsetLayers> e = {
      Entry("Conv", Types({"Conv"}), kernel_bias),
      // Depthwise: one group per input channel.
      Entry("DepthwiseConv2D",
            {Filter("Conv", {Eq("group", Ref("in_channels")),
                             Greater("group", Int(1))})},
            kernel_bias),
      Entry("ConvTranspose", Types({"ConvTranspose"}), kernel_bias),
      // A matrix product with a constant weight; Gemm's C is the bias.
      Entry("FullyConnected",
            {Filter("Gemm", {const_weight}),
             Filter("MatMul", {const_weight, Eq("input1.rank", Int(2))})},
            kernel_bias),
      Entry("Concatenate", Types({"Concat"})),
      Entry("Stack", {}),
      Entry("Unstack", {}),
      Entry("Gather", Types({"Gather"})),
      Entry("Expend", Types({"Expand"})),
      Entry("BatchNorm", Types({"BatchNormalization"})),
      Entry("L2Norm", {Filter("LpNormalization", {Eq("p", Int(2))})}),
      Entry("ReLU", Types({"Relu"})),
      Entry("ReLU6", {Filter("Clip", {ClipBounds({eq(0)}, {eq(6)})})}),
      Entry("LeakyReLU", Types({"LeakyRelu"})),
      Entry("Elu", Types({"Elu"})),
      // MCT: Hardtanh with min 0; Clip(0, 6) is ReLU6 instead.
      Entry("HardTanh", {Filter("Clip", {ClipBounds({eq(0)}, {ne(6)})})}),
      Entry("Add", Types({"Add"})),
      Entry("Sub", Types({"Sub"})),
      Entry("Mul", Types({"Mul"})),
      Entry("Div", Types({"Div"})),
      Entry("Min", Types({"Min"})),
      Entry("Max", Types({"Max"})),
      Entry("PReLU", Types({"PRelu"})),
      Entry("AddBias", {}),
      Entry("Swish", {}),
      Entry("Sigmoid", Types({"Sigmoid"})),
      Entry("Softmax", Types({"Softmax"})),
      Entry("LogSoftmax", Types({"LogSoftmax"})),
      Entry("Tanh", Types({"Tanh"})),
      Entry("Gelu", Types({"Gelu"})),
      Entry("HardSigmoid", Types({"HardSigmoid"})),
      Entry("HardSwish", Types({"HardSwish"})),
      Entry("Flatten", Types({"Flatten"})),
      Entry("GetItem", {}),
      Entry("Reshape", Types({"Reshape"})),
      Entry("Unsqueeze", Types({"Unsqueeze"})),
      Entry("Squeeze", Types({"Squeeze"})),
      Entry("Permute", {}),
      Entry("Transpose", Types({"Transpose"})),
      Entry("Dropout", Types({"Dropout"})),
      Entry("SplitChunk", Types({"Split"})),
      Entry("MaxPool", Types({"MaxPool", "GlobalMaxPool"})),
      Entry("AvgPool", Types({"AveragePool", "GlobalAveragePool"})),
      Entry("Size", Types({"Size"})),
      Entry("Shape", Types({"Shape"})),
      Entry("Equal", Types({"Equal"})),
      Entry("ArgMax", Types({"ArgMax"})),
      Entry("TopK", Types({"TopK"})),
      Entry("FakeQuant", Types({"QuantizeLinear", "DequantizeLinear"})),
      Entry("CombinedNonMaxSuppression", Types({"NonMaxSuppression"})),
      Entry("ZeroPadding2D", {}),
      Entry("Cast", Types({"Cast"})),
      Entry("Resize", Types({"Resize", "Upsample"})),
      Entry("Pad", Types({"Pad"})),
      Entry("Fold", Types({"Col2Im"})),
      Entry("StridedSlice", Types({"Slice"})),
      Entry("SSDPostProcess", {}),
      Entry("Exp", Types({"Exp"})),
      Entry("Sin", Types({"Sin"})),
      Entry("Cos", Types({"Cos"})),
  };
  OpsetLayerMapping m;
  for (auto& x : e) *m.add_entries() = std::move(x);
  return m;
}

const OpsetLayers* FindEntry(const OpsetLayerMapping& m,
                             const std::string& opset) {
  for (const auto& e : m.entries()) {
    if (e.opset() == opset) return &e;
  }
  return nullptr;
}

}  // namespace

const OpsetLayerMapping& DefaultOnnxOpsetMapping() {
  static const OpsetLayerMapping* m = new OpsetLayerMapping(BuildDefault());
  return *m;
}

const quantd::v1::AttributeQuantizationConfig& WeightConfigForInput(
    const AttachedOp& op, const quantd::v1::OpQuantizationConfig& config,
    int input_index) {
  const auto& mapping = config.attr_weights_configs_mapping();
  for (const auto& [attr, index] : op.attr_inputs) {
    if (index != input_index) continue;
    if (auto it = mapping.find(attr); it != mapping.end()) return it->second;
    return config.default_weight_attr_config();
  }
  for (const auto& [attr, cfg] : mapping) {
    if (absl::StrContains(attr, kPosAttr)) return cfg;
  }
  return config.default_weight_attr_config();
}

absl::StatusOr<OnnxTpcAttachment> OnnxTpcAttachment::Create(
    std::shared_ptr<const quantd::v1::TargetPlatformCapabilities> tpc,
    const OpsetLayerMapping* custom) {
  if (tpc == nullptr) return absl::InvalidArgumentError("no TPC to attach");
  OnnxTpcAttachment out;
  out.tpc_ = tpc;
  if (custom != nullptr) {
    for (int i = 0; i < custom->entries_size(); ++i) {
      const auto& e = custom->entries(i);
      const std::string path = absl::StrCat("opset_layer_mapping.entries[", i,
                                            "] (\"", e.opset(), "\")");
      if (e.opset().empty()) {
        return absl::InvalidArgumentError(path + ".opset: empty");
      }
      for (int l = 0; l < e.layers_size(); ++l) {
        absl::Status s = ValidateLayerFilter(
            e.layers(l), absl::StrCat(path, ".layers[", l, "]"));
        if (!s.ok()) return s;
      }
      for (const auto& [attr, index] : e.attr_mapping()) {
        int v = 0;
        if (!absl::SimpleAtoi(index, &v) || v < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ".attr_mapping[\"", attr, "\"]: \"", index,
                           "\" is not an input index"));
        }
      }
    }
  }
  const OpsetLayerMapping& defaults = DefaultOnnxOpsetMapping();
  for (const auto& set : tpc->operator_set()) {
    const OpsetLayers* entry =
        custom != nullptr ? FindEntry(*custom, set.name()) : nullptr;
    if (entry == nullptr) entry = FindEntry(defaults, set.name());
    if (entry == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("operator set \"", set.name(),
                       "\" has no ONNX mapping; supply one in the request's "
                       "opset_layer_mapping"));
    }
    OpSetInfo info;
    info.name = set.name();
    info.qco = set.has_qc_options() ? &set.qc_options() : &tpc->default_qco();
    for (const auto& [attr, index] : entry->attr_mapping()) {
      int v = 0;
      if (absl::SimpleAtoi(index, &v)) info.attr_inputs[attr] = v;
    }
    const int index = static_cast<int>(out.op_sets_.size());
    out.op_sets_.push_back(std::move(info));
    for (const auto& layer : entry->layers()) {
      auto& same_type = out.layers_[layer.op_type()];
      for (const auto& other : same_type) {
        if (google::protobuf::util::MessageDifferencer::Equals(other.filter,
                                                               layer)) {
          return absl::InvalidArgumentError(
              absl::StrCat("ONNX layer ", ToString(layer),
                           " is mapped to two operator "
                           "sets: \"",
                           out.op_sets_[other.op_set_index].name, "\" and \"",
                           set.name(), "\""));
        }
      }
      same_type.push_back({layer, index});
    }
  }
  return out;
}

absl::StatusOr<AttachedOp> OnnxTpcAttachment::Attach(const OpView& op) const {
  std::set<int> by_filter, by_type;
  if (auto it = layers_.find(op.op_type); it != layers_.end()) {
    for (const auto& layer : it->second) {
      if (!Matches(layer.filter, op)) continue;
      (layer.filter.conditions().empty() ? by_type : by_filter)
          .insert(layer.op_set_index);
    }
  }
  const std::set<int>& chosen = by_filter.empty() ? by_type : by_filter;
  if (chosen.size() > 1) {
    std::vector<std::string> names;
    for (int i : chosen) names.push_back("\"" + op_sets_[i].name + "\"");
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", op.name, "' (", op.op_type, ") matches operator sets ",
        absl::StrJoin(names, " and "), "; make the mapping unambiguous"));
  }
  AttachedOp out;
  out.tpc = tpc_;
  if (chosen.empty()) {
    out.qco = &tpc_->default_qco();
    return out;
  }
  const OpSetInfo& info = op_sets_[*chosen.begin()];
  out.op_set = info.name;
  out.qco = info.qco;
  out.attr_inputs = info.attr_inputs;
  return out;
}

}  // namespace quantd::tpc
