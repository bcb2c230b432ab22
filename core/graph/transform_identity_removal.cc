// RemoveIdentities (transforms.h).
#include <utility>

#include "core/graph/constant_eval.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"

namespace quantd {
namespace {

// Identity, or a Dropout that is a no-op at inference: no training_mode, or
// a constant false one, and an unused mask.
bool IsRemovable(const Graph& graph, const GraphIndex& index,
                 const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  if (node.inputs.empty() || node.Input(0).empty() || node.outputs.empty()) {
    return false;
  }
  if (node.op_type == "Identity") return node.outputs.size() == 1;
  if (node.op_type != "Dropout") return false;
  if (node.outputs.size() > 1 && !node.outputs[1].empty() &&
      index.NumUses(node.outputs[1]) > 0) {
    return false;
  }
  const std::string& training = node.Input(2);
  if (training.empty()) return true;
  const Tensor* t = graph.FindInitializer(training);
  if (t == nullptr) return false;
  auto v = ToInt64Vector(*t);
  return v.ok() && v->size() == 1 && (*v)[0] == 0;
}

}  // namespace

absl::Status RemoveIdentities(Model* model) {
  Graph& graph = model->graph;
  // One removal per pass keeps the index exact; chains are short.
  for (bool changed = true; changed;) {
    changed = false;
    GraphIndex index(graph);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = graph.nodes[n];
      if (!IsRemovable(graph, index, node)) continue;
      const std::string in = node.inputs[0];
      const std::string out = node.outputs[0];
      std::vector<bool> remove(graph.nodes.size(), false);
      remove[n] = true;
      if (!index.IsGraphOutput(out)) {
        RenameTensorUses(&graph, out, in);
        graph.value_info.erase(out);
      } else {
        // Keep the output name: the input's producer takes it, if the input
        // is a plain node output seen nowhere else under its own name.
        const int producer = index.Producer(in);
        if (producer < 0 || index.IsGraphOutput(in)) continue;
        for (std::string& o : graph.nodes[producer].outputs) {
          if (o == in) o = out;
        }
        RenameTensorUses(&graph, in, out);
        graph.value_info.erase(in);
      }
      RemoveNodes(&graph, remove);
      changed = true;
      break;
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
