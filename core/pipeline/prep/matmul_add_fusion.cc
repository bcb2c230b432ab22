// MatMul(A, W) + b with a constant 2-D W and a constant bias becomes
// Gemm(A, W, b) (graph preparation). ONNX exporters of opset < 9-era models
// (Paddle's fc, tf2onnx's Dense) write a fully connected layer this way; MCT
// sees one Linear/Dense layer: one quantized output, a bias for bias and
// shift-negative corrections and an int32 bias in the QDQ model.
#include <string>
#include <vector>

#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"
#include "core/pipeline/prep/graph_prep.h"

namespace quantd {
namespace {

// Rank of a graph input or inferred tensor; -1 when unknown.
int RankOf(const Graph& g, const std::string& name) {
  for (const auto& in : g.inputs) {
    if (in.name == name) {
      return in.has_shape ? static_cast<int>(in.shape.size()) : -1;
    }
  }
  auto it = g.value_info.find(name);
  if (it == g.value_info.end() || !it->second.has_shape) return -1;
  return static_cast<int>(it->second.shape.size());
}

}  // namespace

absl::StatusOr<int> FuseMatMulAdd(Model* model) {
  Graph& g = model->graph;
  GraphIndex index(g);
  std::vector<bool> remove(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (mm.op_type != "MatMul" || mm.outputs.size() != 1) continue;
    const Tensor* w = g.FindInitializer(mm.Input(1));
    if (w == nullptr || w->rank() != 2 || w->dtype() != DType::kFloat ||
        RankOf(g, mm.Input(0)) != 2) {
      continue;
    }
    const int add = index.SoleConsumer(static_cast<int>(i));
    if (add < 0 || g.nodes[add].op_type != "Add") continue;
    const Node& an = g.nodes[add];
    const std::string& other =
        an.Input(0) == mm.outputs[0] ? an.Input(1) : an.Input(0);
    const Tensor* b = g.FindInitializer(other);
    const int64_t n = w->dim(1);
    if (b == nullptr || b->dtype() != DType::kFloat || b->num_elements() != n ||
        b->rank() > 2 || (b->rank() == 2 && b->dim(0) != 1)) {
      continue;
    }
    std::string bias = other;
    if (b->rank() != 1) {
      bias = UniqueTensorName(g, other + "_gemm_bias");
      Tensor flat = b->Clone();
      g.initializers[bias] = Tensor::FromVector<float>(
          std::vector<float>(flat.span<float>().begin(),
                             flat.span<float>().end()),
          {n});
    }
    Node gemm;
    gemm.op_type = "Gemm";
    gemm.name = mm.name;
    gemm.inputs = {mm.Input(0), mm.Input(1), bias};
    gemm.outputs = {an.outputs[0]};
    g.nodes[add] = std::move(gemm);  // at the Add's place: inputs are ready
    remove[i] = true;
    ++fused;
  }
  RemoveNodes(&g, remove);
  return fused;
}

}  // namespace quantd
