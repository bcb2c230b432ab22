// FoldConstants and RemoveUnusedInitializers (transforms.h).
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/shape_inference.h"
#include "core/graph/transforms.h"
#include "core/util/status_macros.h"

namespace quantd {

void RemoveUnusedInitializers(Graph* graph) {
  absl::flat_hash_set<std::string> used;
  for (const Node& node : graph->nodes) {
    for (const std::string& in : node.inputs) used.insert(in);
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) CollectOuterReads(*attr.g, &used);
    }
  }
  for (const ValueInfo& out : graph->outputs) used.insert(out.name);
  for (auto it = graph->initializers.begin();
       it != graph->initializers.end();) {
    if (used.contains(it->first)) {
      ++it;
    } else {
      graph->sub_byte_types.erase(it->first);
      it = graph->initializers.erase(it);
    }
  }
}

namespace {

bool SameValue(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.byte_size() == 0 ||
          std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0);
}

}  // namespace

absl::Status FoldConstants(Model* model,
                           const ConstantFoldingOptions& options) {
  ShapeInferenceOptions inference;
  inference.max_constant_elements = options.max_folded_elements;
  ASSIGN_OR_RETURN(ShapeInferenceResult inferred,
                   InferShapes(model, inference));
  if (!options.probe_input_shapes.empty()) {
    // Same graph, other sizes of the dynamic dims: what differs depends on
    // them and stays computed at run time.
    // The inputs and outputs carry the bound shapes (the last inference
    // merged them): the probe sets its own and infers the outputs afresh.
    Model probe = *model;
    ClearInferredShapes(&probe.graph);
    for (ValueInfo& in : probe.graph.inputs) {
      auto it = options.probe_input_shapes.find(in.name);
      if (it == options.probe_input_shapes.end()) continue;
      in.has_shape = true;
      in.shape = it->second;
      in.dim_params.assign(in.shape.size(), "");
    }
    for (ValueInfo& out : probe.graph.outputs) {
      out.has_shape = false;
      out.shape.clear();
      out.dim_params.clear();
    }
    auto probed = InferShapes(&probe, inference);
    if (!probed.ok()) {
      return absl::Status(
          probed.status().code(),
          absl::StrCat("constant folding: the graph does not infer with its "
                       "dynamic dimensions at other sizes: ",
                       probed.status().message()));
    }
    for (auto it = inferred.constants.begin();
         it != inferred.constants.end();) {
      auto other = probed->constants.find(it->first);
      if (other == probed->constants.end() ||
          !SameValue(it->second, other->second)) {
        it = inferred.constants.erase(it);
      } else {
        ++it;
      }
    }
  }
  Graph& graph = model->graph;
  GraphIndex index(graph);
  std::vector<bool> remove(graph.nodes.size(), false);
  bool changed = false;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.outputs.empty()) continue;
    bool all_known = true;
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      if (index.IsGraphOutput(out) || inferred.constants.count(out) == 0) {
        all_known = false;
        break;
      }
    }
    if (!all_known) continue;
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      graph.initializers[out] = inferred.constants[out];
      graph.value_info.erase(out);
    }
    remove[n] = true;
    changed = true;
  }
  if (!changed) return absl::OkStatus();
  RemoveNodes(&graph, remove);
  RemoveUnusedInitializers(&graph);
  return absl::OkStatus();
}

}  // namespace quantd
