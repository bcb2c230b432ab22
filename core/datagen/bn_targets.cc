#include "core/datagen/bn_targets.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace quantd::datagen {
namespace {

// An initializer or the value of a Constant node.
const Tensor* FindConstant(const Graph& g, const std::string& name) {
  if (const Tensor* t = g.FindInitializer(name)) return t;
  for (const Node& n : g.nodes) {
    if (n.op_type == "Constant" && !n.outputs.empty() && n.outputs[0] == name) {
      const Attribute* a = n.FindAttribute("value");
      return a != nullptr && a->type == Attribute::Type::kTensor ? &a->t
                                                                 : nullptr;
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<BnTarget>> FindBnTargets(
    const Graph& graph, const DataGenOptions& options) {
  std::vector<BnTarget> targets;
  if (!options.statistics.empty()) {
    for (const auto& [name, st] : options.statistics) {
      BnTarget t;
      t.tensor = name;
      t.source = "statistics";
      t.mean = st.mean;
      t.std = st.std;
      targets.push_back(std::move(t));
    }
    return targets;
  }
  int bn_nodes = 0;
  std::string why;
  for (const Node& n : graph.nodes) {
    if (n.op_type != "BatchNormalization") continue;
    ++bn_nodes;
    const Tensor* mean =
        n.inputs.size() > 3 ? FindConstant(graph, n.inputs[3]) : nullptr;
    const Tensor* var =
        n.inputs.size() > 4 ? FindConstant(graph, n.inputs[4]) : nullptr;
    if (mean == nullptr || var == nullptr || mean->dtype() != DType::kFloat ||
        var->dtype() != DType::kFloat ||
        mean->num_elements() != var->num_elements()) {
      why = absl::StrCat(n.Label(),
                         " has no constant float running mean / variance");
      continue;
    }
    BnTarget t;
    t.tensor = n.inputs[0];
    t.source = n.Label();
    t.mean.assign(mean->data<float>(),
                  mean->data<float>() + mean->num_elements());
    for (float v : var->span<float>()) t.std.push_back(std::sqrt(v));
    targets.push_back(std::move(t));
  }
  if (targets.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data generation needs BatchNormalization statistics: the model has ",
        bn_nodes, " BatchNormalization node(s)", why.empty() ? "" : " (", why,
        why.empty() ? "" : ")",
        "; if they were folded into the convolutions at export, pass the "
        "expected per-channel mean and std of the Conv outputs "
        "(statistics / --stats FILE)"));
  }
  return targets;
}

}  // namespace quantd::datagen
