#include "core/pipeline/prep/dynamic_shapes.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/graph_edit.h"
#include "core/graph/shape_inference.h"

namespace quantd {
namespace {

const ValueInfo* Find(const std::vector<ValueInfo>& infos,
                      const std::string& name) {
  for (const ValueInfo& v : infos) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

bool IsDynamic(const ValueInfo* declared, size_t dim) {
  return declared == nullptr || !declared->has_shape ||
         dim >= declared->shape.size() || declared->shape[dim] < 0;
}

// The declared shape with the bound (static) one where the declaration
// has nothing: the rank and static dims of the graph as it runs.
ValueInfo Restored(const ValueInfo& bound, const ValueInfo& declared) {
  ValueInfo out = bound;
  if (!declared.has_shape) {
    out.has_shape = false;
    out.shape.clear();
    out.dim_params.clear();
    return out;
  }
  out.shape = declared.shape;
  out.dim_params = declared.dim_params;
  out.dim_params.resize(out.shape.size());
  return out;
}

// "input 'x' dims 0 (N)": the dynamic dims the probe moves, for warnings.
std::string DynamicDims(const std::vector<ValueInfo>& declared,
                        const InputShapes& probe) {
  std::vector<std::string> parts;
  for (const auto& [name, shape] : probe) {
    const ValueInfo* d = Find(declared, name);
    std::vector<std::string> dims;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (!IsDynamic(d, i)) continue;
      const bool named =
          d != nullptr && i < d->dim_params.size() && !d->dim_params[i].empty();
      dims.push_back(named ? absl::StrCat(i, " (", d->dim_params[i], ")")
                           : absl::StrCat(i));
    }
    if (dims.empty()) continue;  // e.g. a scalar
    parts.push_back(
        absl::StrCat("input '", name, "' dim ", absl::StrJoin(dims, ", ")));
  }
  return absl::StrJoin(parts, "; ");
}

// Body inputs and outputs of If/Loop/Scan got the bound shapes merged in:
// their types stay, their shapes go (ONNX Runtime infers them).
void DropSubgraphShapes(Graph* graph) {
  for (Node& node : graph->nodes) {
    for (auto& [key, attr] : node.attributes) {
      if (!attr.g) continue;
      Graph* body = MutableSubgraph(&attr);
      for (auto* infos : {&body->inputs, &body->outputs}) {
        for (ValueInfo& v : *infos) {
          v.has_shape = false;
          v.shape.clear();
          v.dim_params.clear();
        }
      }
      DropSubgraphShapes(body);
    }
  }
}

// OK when `model` infers with its inputs bound to `shapes`.
absl::Status InfersAt(const Model& model, const InputShapes& shapes) {
  Model check = model;
  ShapeInferenceOptions options;
  options.input_shapes = shapes;
  return InferShapes(&check, options).status();
}

}  // namespace

InputShapes ProbeShapes(const std::vector<ValueInfo>& declared,
                        const InputShapes& bound) {
  InputShapes probe;
  bool any = false;
  for (const auto& [name, shape] : bound) {
    const ValueInfo* d = Find(declared, name);
    std::vector<int64_t> moved = shape;
    for (size_t i = 0; i < moved.size(); ++i) {
      if (!IsDynamic(d, i)) continue;
      moved[i] = moved[i] > 0 ? 2 * moved[i] : 1;
      any = true;
    }
    probe[name] = std::move(moved);
  }
  if (!any) probe.clear();
  return probe;
}

void RestoreDeclaredShapes(const std::vector<ValueInfo>& declared_inputs,
                           const std::vector<ValueInfo>& declared_outputs,
                           Model* model, std::vector<std::string>* warnings,
                           const Model* float_model) {
  Graph& graph = model->graph;
  InputShapes bound;
  for (const ValueInfo& in : graph.inputs) {
    if (in.has_shape) bound[in.name] = in.shape;
  }
  const InputShapes probe = ProbeShapes(declared_inputs, bound);
  if (probe.empty()) return;  // nothing was dynamic

  Model restored = *model;
  for (ValueInfo& in : restored.graph.inputs) {
    if (const ValueInfo* d = Find(declared_inputs, in.name)) {
      in = Restored(in, *d);
    }
  }
  for (ValueInfo& out : restored.graph.outputs) {
    if (const ValueInfo* d = Find(declared_outputs, out.name)) {
      out = Restored(out, *d);
    }
  }
  ClearInferredShapes(&restored.graph);
  DropSubgraphShapes(&restored.graph);

  // The check: the restored graph must infer with the dynamic dims moved.
  const absl::Status inferred = InfersAt(restored, probe);
  if (inferred.ok()) {
    *model = std::move(restored);
    return;
  }
  // A float model that fails the same probe has dims that are dynamic only
  // in name (silero_vad's If branches each take one input length): the
  // failure is its own, and fixing its inputs would be worse, since ONNX
  // Runtime then type-checks every branch at the samples' sizes.
  if (float_model != nullptr) {
    const absl::Status float_inferred = InfersAt(*float_model, probe);
    if (!float_inferred.ok()) {
      warnings->push_back(absl::StrCat(
          "the QDQ model declares the float model's dynamic inputs (",
          DynamicDims(declared_inputs, probe),
          "), but like the float model it infers only at some sizes: ",
          float_inferred.message()));
      *model = std::move(restored);
      return;
    }
  }
  warnings->push_back(absl::StrCat(
      "the QDQ model keeps the calibration shapes (",
      DynamicDims(declared_inputs, probe),
      " fixed): it does not run at other sizes: ", inferred.message()));
  // The bodies still carry no inferred shapes: ONNX Runtime infers them.
  for (Node& node : graph.nodes) {
    for (auto& [key, attr] : node.attributes) {
      if (attr.g) ClearInferredShapes(MutableSubgraph(&attr));
    }
  }
  DropSubgraphShapes(&graph);
}

}  // namespace quantd
