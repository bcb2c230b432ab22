// MCT's ReLU-bound-to-power-of-two (mct-reference §1.3, pre-statistics):
// Linear -> Clip(0, M) -> Linear with M not a power of two becomes
// Linear/s -> Clip(0, 8) -> Linear*s with s = M / 8, so the bounded
// activation fills a power-of-two grid (ReLU6 uses 6/8 of it otherwise).
// Clip is positively homogeneous, clip(x/s, 0, M/s) = clip(x, 0, M)/s, so the
// float function is unchanged.
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"
#include "core/pipeline/prep/graph_prep.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

constexpr double kReluPotBound = 8.0;  // MCT's RELU_POT_BOUND

bool IsLinear(const Graph& g, const Node& n) {
  return (n.op_type == "Conv" || n.op_type == "Gemm" ||
          n.op_type == "ConvTranspose") &&
         g.FindInitializer(n.Input(1)) != nullptr &&
         g.FindInitializer(n.Input(1))->dtype() == DType::kFloat &&
         (n.Input(2).empty() || g.FindInitializer(n.Input(2)) != nullptr);
}

std::optional<double> Scalar(const Graph& g, const std::string& name) {
  const Tensor* t = g.FindInitializer(name);
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  auto f = t->CastToFloat();
  if (!f.ok()) return std::nullopt;
  return static_cast<double>(f->data<float>()[0]);
}

// Replaces input `k` of `node` by a private copy of the constant scaled by
// `factor` (initializers may be shared).
absl::Status ScaleConstantInput(Graph* g, Node* node, int k, double factor) {
  ASSIGN_OR_RETURN(Tensor t, g->FindInitializer(node->Input(k))->CastToFloat());
  Tensor scaled = t.Clone();
  for (float& v : scaled.mutable_span<float>()) {
    v = static_cast<float>(v * factor);
  }
  const std::string name =
      UniqueTensorName(*g, absl::StrCat(node->Input(k), "_relu_pot"));
  g->initializers[name] = std::move(scaled);
  node->inputs[k] = name;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> ReluBoundToPowerOfTwo(Model* model) {
  Graph& g = model->graph;
  int changed = 0;
  GraphIndex index(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!IsLinear(g, g.nodes[i])) continue;
    const int act = index.SoleConsumer(static_cast<int>(i));
    if (act < 0 || g.nodes[act].op_type != "Clip") continue;
    const int second = index.SoleConsumer(act);
    if (second < 0 || !IsLinear(g, g.nodes[second]) ||
        g.nodes[second].Input(0) != g.nodes[act].outputs[0]) {
      continue;
    }
    Node& clip = g.nodes[act];
    const std::optional<double> lo = Scalar(g, clip.Input(1));
    const std::optional<double> hi = Scalar(g, clip.Input(2));
    if (!lo || *lo != 0.0 || !hi || !(*hi > 0)) continue;
    const double log2 = std::log2(*hi);
    if (log2 == std::floor(log2)) continue;  // already a power of two
    const double s = *hi / kReluPotBound;
    Node& first = g.nodes[i];
    RETURN_IF_ERROR(ScaleConstantInput(&g, &first, 1, 1.0 / s));
    if (!first.Input(2).empty()) {
      RETURN_IF_ERROR(ScaleConstantInput(&g, &first, 2, 1.0 / s));
    }
    const std::string bound =
        UniqueTensorName(g, absl::StrCat(clip.name, "_pot_max"));
    g.initializers[bound] =
        Tensor::FromVector<float>({static_cast<float>(kReluPotBound)}, {});
    clip.inputs[2] = bound;
    RETURN_IF_ERROR(ScaleConstantInput(&g, &g.nodes[second], 1, s));
    ++changed;
  }
  return changed;
}

}  // namespace quantd
