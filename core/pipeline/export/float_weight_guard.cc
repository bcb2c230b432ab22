#include "core/pipeline/export/float_weight_guard.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/shape_inference.h"
#include "core/pipeline/prep/dynamic_shapes.h"

namespace quantd {
namespace {

// Whether `tensor` reaches a quantized tensor through nodes that ONNX
// Runtime's transformer walks: each the only consumer, Relu or Clip.
bool ReachesQuantizeLinear(
    std::string tensor, const std::set<std::string>& quantized,
    const std::map<std::string, std::vector<const Node*>>& consumers) {
  for (int steps = 0; steps < 64; ++steps) {
    if (quantized.count(tensor) != 0) return true;
    auto it = consumers.find(tensor);
    if (it == consumers.end() || it->second.size() != 1) return false;
    const Node* next = it->second.front();
    if (next == nullptr ||
        (next->op_type != "Relu" && next->op_type != "Clip") ||
        next->outputs.size() != 1) {
      return false;
    }
    tensor = next->outputs[0];
  }
  return false;
}

// The input-channel axis of input 0 and its length, from the weight's
// shape; {-1, 0} when they cannot be told.
std::pair<int, int64_t> InputChannels(const Node& n, const Tensor& w) {
  if (n.op_type == "Conv" && w.rank() >= 3) {
    return {1, w.dim(1) * n.GetInt("group", 1)};
  }
  if (n.op_type == "ConvTranspose" && w.rank() >= 3) return {1, w.dim(0)};
  if (n.op_type == "Gemm" && w.rank() == 2) {
    const int axis = n.GetInt("transA", 0) != 0 ? 0 : 1;
    return {axis, n.GetInt("transB", 0) != 0 ? w.dim(1) : w.dim(0)};
  }
  return {-1, 0};
}

// Shapes of every tensor of `model` with its inputs at `shapes` (the bound
// ones when empty); empty if inference fails.
std::map<std::string, std::vector<int64_t>> ShapesAt(
    const Model& model, const InputShapes& shapes) {
  Model copy = model;
  ClearInferredShapes(&copy.graph);
  for (ValueInfo& in : copy.graph.inputs) {
    auto it = shapes.find(in.name);
    if (it == shapes.end()) continue;
    in.shape = it->second;  // the bound inputs refuse other sizes
    in.dim_params.assign(in.shape.size(), "");
    in.has_shape = true;
  }
  for (ValueInfo& out : copy.graph.outputs) {
    out.shape.clear();  // bound as well
    out.dim_params.clear();
    out.has_shape = false;
  }
  ShapeInferenceOptions options;
  options.input_shapes = shapes;
  std::map<std::string, std::vector<int64_t>> out;
  if (!InferShapes(&copy, options).ok()) return out;
  for (const ValueInfo& in : copy.graph.inputs) {
    auto it = shapes.find(in.name);
    out[in.name] = it != shapes.end() ? it->second : in.shape;
  }
  for (const auto& [name, info] : copy.graph.value_info) {
    if (info.has_shape) out[name] = info.shape;
  }
  return out;
}

// The last axis of `tensor` whose size is > 1 at both shape sets; -1 if none.
int StaticAxis(const std::string& tensor,
               const std::map<std::string, std::vector<int64_t>>& bound,
               const std::map<std::string, std::vector<int64_t>>& probe) {
  auto b = bound.find(tensor);
  auto p = probe.find(tensor);
  if (b == bound.end() || p == probe.end() ||
      b->second.size() != p->second.size()) {
    return -1;
  }
  for (int k = static_cast<int>(b->second.size()) - 1; k >= 0; --k) {
    if (b->second[k] > 1 && b->second[k] == p->second[k]) return k;
  }
  return -1;
}

}  // namespace

std::vector<std::string> PlaceSingleChannelGuards(
    const Model& model, const std::vector<ValueInfo>& declared_inputs,
    QdqPlan* plan) {
  std::vector<std::string> warnings;
  bool any = false;
  for (const QdqActivation& a : plan->activations) {
    for (const auto& [consumer, axis] : a.per_channel_consumers) {
      any = any || axis.second == 1;
    }
  }
  if (!any) return warnings;
  InputShapes bound_inputs;
  for (const ValueInfo& in : model.graph.inputs) {
    if (in.has_shape) bound_inputs[in.name] = in.shape;
  }
  const auto bound = ShapesAt(model, bound_inputs);
  const InputShapes probe_inputs = ProbeShapes(declared_inputs, bound_inputs);
  const auto probe =
      probe_inputs.empty() ? bound : ShapesAt(model, probe_inputs);
  for (QdqActivation& a : plan->activations) {
    for (auto& [consumer, axis] : a.per_channel_consumers) {
      if (axis.second != 1) continue;
      const int k = StaticAxis(a.tensor, bound, probe);
      if (k < 0) {
        warnings.push_back(absl::StrCat(
            "node '", consumer, "' has one input channel and '", a.tensor,
            "' no static dimension > 1: ONNX Runtime's default level will "
            "give its float weights per-tensor int8 (run it with graph "
            "optimizations disabled to keep them float)"));
        continue;
      }
      axis = {k, bound.at(a.tensor)[k]};
    }
  }
  return warnings;
}

void GuardFloatWeights(const Graph& graph, QdqPlan* plan) {
  std::map<std::string, QdqActivation*> activations;
  for (QdqActivation& a : plan->activations) activations[a.tensor] = &a;
  std::set<std::string> quantized;
  for (const auto& [tensor, a] : activations) quantized.insert(tensor);
  std::map<std::string, std::vector<const Node*>> consumers;
  for (const Node& n : graph.nodes) {
    for (const std::string& in : n.inputs) {
      if (!in.empty()) consumers[in].push_back(&n);
    }
  }
  // A graph output counts as one more consumer (a branch).
  for (const ValueInfo& out : graph.outputs) {
    consumers[out.name].push_back(nullptr);
  }
  std::set<std::string> quantized_weight_of;
  for (const QdqWeight& w : plan->weights) {
    if (w.input_index == 1) quantized_weight_of.insert(w.node);
  }
  for (const Node& n : graph.nodes) {
    if (n.op_type != "Conv" && n.op_type != "ConvTranspose" &&
        n.op_type != "Gemm") {
      continue;
    }
    auto act = activations.find(n.Input(0));
    const Tensor* w = graph.FindInitializer(n.Input(1));
    if (act == activations.end() || w == nullptr ||
        w->dtype() != DType::kFloat || quantized_weight_of.count(n.name) ||
        n.outputs.size() != 1 ||
        !ReachesQuantizeLinear(n.outputs[0], quantized, consumers)) {
      continue;
    }
    const auto [axis, channels] = InputChannels(n, *w);
    if (axis < 0 || channels <= 0) continue;
    act->second->per_channel_consumers[n.name] = {axis, channels};
  }
}

}  // namespace quantd
