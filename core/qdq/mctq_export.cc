#include "core/qdq/mctq_export.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/mctq_ops.h"
#include "core/graph/validation.h"
#include "core/qdq/internal/export_util.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

using qdq_internal::FloatAttr;
using qdq_internal::IntAttr;
using qdq_internal::NameTable;
using qdq_internal::StringAttr;

bool IsLut(v1::QuantizationMethod m) {
  return m == v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER ||
         m == v1::QUANTIZATION_METHOD_LUT_SYM_QUANTIZER;
}

Node MakeConstant(const std::string& name, std::vector<float> values) {
  Node c;
  c.name = name;
  c.op_type = "Constant";
  c.outputs = {absl::StrCat(name, "_output_0")};
  Attribute v;
  v.type = Attribute::Type::kTensor;
  const int64_t n = static_cast<int64_t>(values.size());
  v.t = Tensor::FromVector<float>(values, {n});
  c.attributes["value"] = std::move(v);
  return c;
}

// The activation quantizer node for one tensor (attributes as
// mct_quantizers' Activation*F.symbolic writes them).
absl::StatusOr<Node> ActivationNode(const ActivationParams& a,
                                    const std::string& input,
                                    NameTable* names) {
  Node q;
  q.domain = std::string(kMctqDomain);
  q.inputs = {input};
  switch (a.method) {
    case v1::QUANTIZATION_METHOD_POWER_OF_TWO:
    case v1::QUANTIZATION_METHOD_SYMMETRIC:
      q.op_type = std::string(a.method == v1::QUANTIZATION_METHOD_POWER_OF_TWO
                                  ? kActivationPotQuantizer
                                  : kActivationSymmetricQuantizer);
      if (!(a.threshold > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("activation '", a.tensor, "': threshold ", a.threshold,
                         " is not positive"));
      }
      q.attributes["threshold"] = FloatAttr(a.threshold);
      q.attributes["signed"] = IntAttr(a.is_signed ? 1 : 0);
      break;
    case v1::QUANTIZATION_METHOD_UNIFORM:
      q.op_type = std::string(kActivationUniformQuantizer);
      q.attributes["min_range"] = FloatAttr(a.range_min);
      q.attributes["max_range"] = FloatAttr(a.range_max);
      break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("activation '", a.tensor, "': method ",
                       v1::QuantizationMethod_Name(a.method),
                       " has no mct_quantizers 1.5.2 ONNX op (MCTQ export)"));
  }
  q.attributes["num_bits"] = IntAttr(a.n_bits);
  q.attributes["mctq_version"] = StringAttr(kMctqVersion);
  q.name = names->Unique(
      absl::StrCat(a.tensor, "_activation_holder_quantizer/", q.op_type));
  return q;
}

std::vector<float> ToFloats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// The weight quantizer of `node`'s input w.input_index and its Constant
// parameter nodes (appended to `out` in that order); returns the quantized
// tensor's name.
absl::StatusOr<std::string> AddWeightQuantizer(const Node& node,
                                               const WeightParams& w,
                                               const Tensor& weight,
                                               NameTable* names,
                                               std::vector<Node>* out) {
  const std::string what = absl::StrCat(node.Label(), " input ", w.input_index);
  Node q;
  q.domain = std::string(kMctqDomain);
  q.inputs = {node.Input(w.input_index)};
  std::vector<std::pair<std::string, std::vector<float>>> params;
  const size_t channels = static_cast<size_t>(
      w.per_channel && w.channel_axis >= 0 && w.channel_axis < weight.rank()
          ? weight.dim(w.channel_axis)
          : 1);
  auto check = [&](const char* field, int size) -> absl::Status {
    if (static_cast<size_t>(size) != channels) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", size, " ", field, " for ", channels, " channel(s)"));
    }
    return absl::OkStatus();
  };
  switch (w.method) {
    case v1::QUANTIZATION_METHOD_POWER_OF_TWO:
    case v1::QUANTIZATION_METHOD_SYMMETRIC:
      q.op_type = std::string(w.method == v1::QUANTIZATION_METHOD_POWER_OF_TWO
                                  ? kWeightsPotQuantizer
                                  : kWeightsSymmetricQuantizer);
      RETURN_IF_ERROR(check("thresholds", w.thresholds.size()));
      params.emplace_back("threshold", ToFloats(w.thresholds));
      break;
    case v1::QUANTIZATION_METHOD_UNIFORM:
      q.op_type = std::string(kWeightsUniformQuantizer);
      RETURN_IF_ERROR(check("range_min values", w.range_min.size()));
      RETURN_IF_ERROR(check("range_max values", w.range_max.size()));
      params.emplace_back("min_range", ToFloats(w.range_min));
      params.emplace_back("max_range", ToFloats(w.range_max));
      break;
    case v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER:
    case v1::QUANTIZATION_METHOD_LUT_SYM_QUANTIZER:
      q.op_type =
          std::string(w.method == v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER
                          ? kWeightsLutPotQuantizer
                          : kWeightsLutSymmetricQuantizer);
      RETURN_IF_ERROR(check("thresholds", w.thresholds.size()));
      if (w.lut_values.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": LUT method without lut_values"));
      }
      params.emplace_back("lut_values", w.lut_values);
      params.emplace_back("threshold", ToFloats(w.thresholds));
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": unknown method ", static_cast<int>(w.method)));
  }
  const std::string scope = absl::StrCat(node.name, "/", q.op_type);
  q.name = names->Unique(scope);
  for (auto& [label, values] : params) {
    Node c = MakeConstant(names->Unique(absl::StrCat(scope, "/", label)),
                          std::move(values));
    q.inputs.push_back(c.outputs[0]);
    out->push_back(std::move(c));
  }
  // symbolic(): channel_axis is the kernel's output axis even per tensor.
  q.attributes["num_bits"] = IntAttr(w.n_bits);
  q.attributes["per_channel"] = IntAttr(w.per_channel ? 1 : 0);
  q.attributes["channel_axis"] =
      IntAttr(w.channel_axis >= 0 ? w.channel_axis : 0);
  // Weights quantizers are signed; WeightsUniformF passes is_signed() too.
  q.attributes["signed"] = IntAttr(1);
  if (IsLut(w.method)) {
    q.attributes["input_rank"] = IntAttr(weight.rank());
    q.attributes["lut_values_bitwidth"] = IntAttr(8);
    q.attributes["eps"] = FloatAttr(1e-8);
  }
  q.attributes["mctq_version"] = StringAttr(kMctqVersion);
  q.outputs = {names->Unique(absl::StrCat(q.name, "_output_0"))};
  std::string result = q.outputs[0];
  out->push_back(std::move(q));
  return result;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> MctqMetadata(
    const v1::TargetPlatformCapabilities& tpc) {
  if (!tpc.add_metadata()) return {};
  // MCT's get_versions_dict (minus mct_version) and mct_quantizers' own key.
  return {{"tpc_minor_version", absl::StrCat(tpc.tpc_minor_version())},
          {"tpc_patch_version", absl::StrCat(tpc.tpc_patch_version())},
          {"tpc_platform_type", tpc.tpc_platform_type()},
          {"tpc_name", tpc.name()},
          {"tpc_schema", absl::StrCat(tpc.schema_version())},
          {"mctq_version", std::string(kMctqVersion)}};
}

absl::StatusOr<Model> BuildMctqModel(const Model& float_model,
                                     const ModelQuantization& quantization,
                                     const MctqExportOptions& options) {
  Model model = float_model;
  Graph& g = model.graph;
  NameTable names(g);

  // Decisions by tensor and by node.
  std::map<std::string, const ActivationParams*> activations;
  auto add_activation = [&](const ActivationParams* a) {
    if (!a->preserved_from.empty() && !options.insert_preserving_quantizers) {
      return;
    }
    activations[a->tensor] = a;
  };
  for (const ActivationParams* a : quantization.inputs) add_activation(a);
  std::map<std::string, const std::vector<WeightParams>*> by_node;
  for (const NodeQuantization& n : quantization.nodes) {
    for (const ActivationParams* a : n.activations) add_activation(a);
    if (n.weights != nullptr && !n.weights->empty()) {
      by_node[n.node] = n.weights;
    }
  }
  std::set<std::string> node_names;
  for (const Node& n : g.nodes) node_names.insert(n.name);
  for (const auto& [name, qn] : by_node) {
    if (!node_names.count(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantized node '", name, "' is not in the model"));
    }
  }
  std::set<std::string> graph_outputs;
  for (const ValueInfo& o : g.outputs) graph_outputs.insert(o.name);

  std::map<std::string, std::string> renamed;  // float tensor -> quantized
  std::vector<Node> nodes;
  std::set<std::string> done;
  // Inserts the quantizer of `tensor` (if any) and records the renaming.
  auto quantize_tensor = [&](const std::string& tensor,
                             std::string* producer_output) -> absl::Status {
    auto it = activations.find(tensor);
    if (it == activations.end() || !done.insert(tensor).second) {
      return absl::OkStatus();
    }
    std::string input = tensor;
    if (graph_outputs.count(tensor) && producer_output != nullptr) {
      input = names.Unique(absl::StrCat(tensor, "_float"));
      *producer_output = input;
    }
    ASSIGN_OR_RETURN(Node q, ActivationNode(*it->second, input, &names));
    if (input != tensor) {
      q.outputs = {tensor};
    } else {
      q.outputs = {names.Unique(absl::StrCat(q.name, "_output_0"))};
      renamed[tensor] = q.outputs[0];
    }
    nodes.push_back(std::move(q));
    return absl::OkStatus();
  };
  for (const ValueInfo& in : g.inputs) {
    RETURN_IF_ERROR(quantize_tensor(in.name, nullptr));
  }
  for (Node& node : g.nodes) {
    for (std::string& in : node.inputs) {
      auto r = renamed.find(in);
      if (r != renamed.end()) in = r->second;
    }
    auto qn = by_node.find(node.name);
    if (qn != by_node.end()) {
      for (const WeightParams& w : *qn->second) {
        const int k = w.input_index;
        const Tensor* t = g.FindInitializer(node.Input(k));
        if (t == nullptr || t->dtype() != DType::kFloat) {
          return absl::InvalidArgumentError(
              absl::StrCat(node.Label(), ": input ", k,
                           " is not a float initializer (MCTQ export)"));
        }
        ASSIGN_OR_RETURN(std::string q,
                         AddWeightQuantizer(node, w, *t, &names, &nodes));
        node.inputs[k] = q;
      }
    }
    const size_t index = nodes.size();
    nodes.push_back(std::move(node));
    for (size_t k = 0; k < nodes[index].outputs.size(); ++k) {
      const std::string out = nodes[index].outputs[k];
      if (out.empty()) continue;
      std::string producer_output = out;
      RETURN_IF_ERROR(quantize_tensor(out, &producer_output));
      nodes[index].outputs[k] = producer_output;
    }
  }
  g.nodes = std::move(nodes);
  // A graph output read directly from a quantized graph input.
  for (ValueInfo& o : g.outputs) {
    auto r = renamed.find(o.name);
    if (r != renamed.end()) o.name = r->second;
  }
  for (const auto& [tensor, a] : activations) {
    if (!done.count(tensor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantized activation '", tensor, "' is not a tensor of the model"));
    }
  }
  model.opset_import[std::string(kMctqDomain)] = kMctqOpsetVersion;
  model.metadata_props = options.metadata;
  g.value_info.clear();  // stale for renamed tensors; ONNX does not need it
  RETURN_IF_ERROR(ValidateModel(&model));
  return model;
}

}  // namespace quantd
