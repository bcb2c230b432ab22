#include "core/pruning/pruning_section.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_index.h"

namespace quantd::pruning {
namespace {

// The chain's channel axis: 1 of a rank-`rank` tensor after a Conv; the last
// axis after a Gemm (rank 2) or MatMul (rank unknown: -1).
struct ChainAxis {
  bool last = false;
  int rank = -1;
};

// A kernel layer: Conv with group 1, Gemm or MatMul with a constant weight.
struct KernelLayer {
  const Tensor* weight = nullptr;
  int out_axis = 0;  // of the weight
  int in_axis = 1;
  ChainAxis chain;
};

bool IsKernelType(const Node& n) {
  return n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul";
}

// Fills `k` when `n` is a kernel layer; else "" and false, or an error
// message for a kernel-typed node that cannot take part.
bool AsKernelLayer(const Node& n, const Graph& g, KernelLayer* k,
                   std::string* why) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  k->weight = g.FindInitializer(n.Input(1));
  if (k->weight == nullptr || k->weight->dtype() != DType::kFloat) {
    *why = "weight is not a float32 initializer";
    return false;
  }
  if (n.op_type == "Conv") {
    if (n.GetInt("group", 1) != 1) {
      *why = "grouped or depthwise Conv (MCT prunes group 1 only)";
      return false;
    }
    if (k->weight->rank() < 3) return false;
    k->out_axis = 0;
    k->in_axis = 1;
    k->chain = {false, k->weight->rank()};
    return true;
  }
  if (k->weight->rank() != 2) {
    *why = "weight is not 2-D";
    return false;
  }
  if (n.op_type == "Gemm") {
    if (n.GetInt("transA", 0) != 0) {
      *why = "Gemm with transA";
      return false;
    }
    const bool trans_b = n.GetInt("transB", 0) != 0;
    k->out_axis = trans_b ? 0 : 1;
    k->in_axis = trans_b ? 1 : 0;
    k->chain = {true, 2};
    return true;
  }
  if (n.op_type == "MatMul") {
    k->out_axis = 1;
    k->in_axis = 0;
    k->chain = {true, -1};
    return true;
  }
  return false;
}

// The channel axis of a constant broadcast against the chain, when all its
// other dims are 1 and that one is `channels`; -1 for a one-element
// constant (no channel axis); -2 when it is neither.
int ConstantChannelAxis(const Tensor& t, const ChainAxis& chain,
                        int64_t channels) {
  if (t.num_elements() == 1) return -1;
  int axis;
  if (chain.last) {
    axis = t.rank() - 1;
  } else {
    if (t.rank() > chain.rank) return -2;
    axis = 1 - (chain.rank - t.rank());
  }
  if (axis < 0) return -2;
  for (int d = 0; d < t.rank(); ++d) {
    if (t.dim(d) != (d == axis ? channels : 1)) return -2;
  }
  return axis;
}

const std::set<std::string>& UnaryOps() {
  static const auto* ops = new std::set<std::string>{
      "Relu",     "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
      "Tanh",     "Elu",       "Selu",    "Softplus",    "Clip",
      "Identity", "Gelu",      "Mish",    "Abs",         "Neg"};
  return *ops;
}

class SectionFinder {
 public:
  explicit SectionFinder(const Graph& g) : g_(g), index_(g) {}

  // Extends `s` (entry set) with the chain and exit, or says why not.
  std::string Walk(PruningSection* s, const ChainAxis& chain) {
    int cur = s->entry;
    while (true) {
      const Node& node = g_.nodes[cur];
      if (node.outputs.empty()) return "no output";
      const std::string& value = node.outputs[0];
      for (size_t k = 1; k < node.outputs.size(); ++k) {
        if (!node.outputs[k].empty()) {
          return absl::StrCat(node.Label(), " has more than one output");
        }
      }
      if (index_.IsGraphOutput(value)) {
        return absl::StrCat("'", value, "' is a graph output");
      }
      if (index_.NumConsumers(value) != 1) {
        return absl::StrCat("'", value, "' is read by ",
                            index_.NumConsumers(value),
                            " nodes (residual/concat/branch)");
      }
      const int next = index_.Consumers(value)[0];
      const Node& n = g_.nodes[next];
      if (IsKernelType(n)) return Exit(s, next, value);
      std::string why = Intermediate(s, n, value, chain);
      if (!why.empty()) return why;
      s->intermediates.push_back(next);
      s->chain_values.push_back(n.outputs[0]);
      cur = next;
    }
  }

  const GraphIndex& index() const { return index_; }

 private:
  std::string Exit(PruningSection* s, int exit, const std::string& value) {
    const Node& n = g_.nodes[exit];
    KernelLayer k;
    std::string why;
    if (!AsKernelLayer(n, g_, &k, &why)) {
      return absl::StrCat("exit ", n.Label(), ": ",
                          why.empty() ? "not prunable" : why);
    }
    if (n.Input(0) != value || n.Input(1) == value) {
      return absl::StrCat("exit ", n.Label(), " reads the chain as a weight");
    }
    if (k.weight->dim(k.in_axis) != s->channels) {
      return absl::StrCat("exit ", n.Label(), " has ", k.weight->dim(k.in_axis),
                          " input channels, entry ", s->channels,
                          " outputs (reshape in between?)");
    }
    if (index_.NumConsumers(n.Input(1)) != 1) {
      return absl::StrCat("exit ", n.Label(), ": weight shared");
    }
    s->exit = exit;
    s->tensors.push_back({n.Input(1), k.in_axis});
    return "";
  }

  // Adds the per-channel constants of intermediate node `n`, or says why it
  // cannot be one.
  std::string Intermediate(PruningSection* s, const Node& n,
                           const std::string& value, const ChainAxis& chain) {
    const std::string label = n.Label();
    if (!n.domain.empty() && n.domain != "ai.onnx") {
      return absl::StrCat(label, " is not a per-channel op");
    }
    if (n.Input(0) != value) {
      if (!(n.op_type == "Add" || n.op_type == "Mul" || n.op_type == "Sub" ||
            n.op_type == "Div") ||
          n.Input(1) != value) {
        return absl::StrCat(label, " reads the chain as a parameter");
      }
    }
    for (size_t k = 1; k < n.outputs.size(); ++k) {
      if (!n.outputs[k].empty()) return absl::StrCat(label, ": extra outputs");
    }
    std::vector<ChannelTensor> found;
    auto take_constant = [&](const std::string& name) -> std::string {
      const Tensor* t = g_.FindInitializer(name);
      if (t == nullptr)
        return absl::StrCat(label, ": '", name, "' is not a constant");
      const int axis = ConstantChannelAxis(*t, chain, s->channels);
      if (axis == -2) {
        return absl::StrCat(label, ": constant '", name,
                            "' is neither scalar nor per channel");
      }
      if (axis >= 0) {
        if (index_.NumConsumers(name) != 1) {
          return absl::StrCat(label, ": constant '", name, "' is shared");
        }
        found.push_back({name, axis});
      }
      return "";
    };
    if (UnaryOps().count(n.op_type) > 0) {
      for (size_t k = 1; k < n.inputs.size(); ++k) {
        if (n.inputs[k].empty()) continue;
        const Tensor* t = g_.FindInitializer(n.inputs[k]);
        if (t == nullptr || t->num_elements() != 1) {
          return absl::StrCat(label, ": non-scalar parameter");
        }
      }
    } else if (n.op_type == "BatchNormalization") {
      if (chain.last && chain.rank != 2) {
        return absl::StrCat(label, " after a MatMul of unknown rank");
      }
      if (n.inputs.size() != 5) return absl::StrCat(label, ": needs 5 inputs");
      for (int k = 1; k < 5; ++k) {
        const Tensor* t = g_.FindInitializer(n.Input(k));
        if (t == nullptr || t->rank() != 1 || t->dim(0) != s->channels) {
          return absl::StrCat(label, ": parameter ", k, " is not a [",
                              s->channels, "] constant");
        }
        if (index_.NumConsumers(n.Input(k)) != 1) {
          return absl::StrCat(label, ": parameter '", n.Input(k),
                              "' is shared");
        }
        found.push_back({n.Input(k), 0});
      }
    } else if (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" ||
               n.op_type == "Div" || n.op_type == "PRelu") {
      if (n.inputs.size() != 2) return absl::StrCat(label, ": needs 2 inputs");
      const std::string& other = n.Input(0) == value ? n.Input(1) : n.Input(0);
      std::string why = take_constant(other);
      if (!why.empty()) return why;
    } else {
      return absl::StrCat(label, " is not a per-channel op");
    }
    for (ChannelTensor& t : found) s->tensors.push_back(std::move(t));
    return "";
  }

  const Graph& g_;
  GraphIndex index_;
};

}  // namespace

SectionSearch FindPruningSections(const Graph& graph) {
  SectionSearch result;
  SectionFinder finder(graph);
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    const Node& n = graph.nodes[i];
    if (!IsKernelType(n)) continue;
    KernelLayer k;
    std::string why;
    if (!AsKernelLayer(n, graph, &k, &why)) {
      if (!why.empty()) result.rejected.push_back(n.Label() + ": " + why);
      continue;
    }
    PruningSection s;
    s.entry = i;
    s.channels = k.weight->dim(k.out_axis);
    s.entry_kernel = {n.Input(1), k.out_axis};
    s.tensors.push_back(s.entry_kernel);
    if (finder.index().NumConsumers(n.Input(1)) != 1) {
      result.rejected.push_back(n.Label() + ": weight shared");
      continue;
    }
    const std::string& bias = n.Input(2);
    if (!bias.empty()) {
      const Tensor* b = graph.FindInitializer(bias);
      int axis = -2;
      if (b != nullptr && n.op_type == "Conv") {
        axis = b->rank() == 1 && b->dim(0) == s.channels ? 0 : -2;
      } else if (b != nullptr) {
        axis = ConstantChannelAxis(*b, k.chain, s.channels);
      }
      // Gemm's C broadcasts against [M, N]: a [N] or [1, N] bias.
      if (axis == -2 || finder.index().NumConsumers(bias) != 1) {
        result.rejected.push_back(n.Label() +
                                  ": bias not a per-channel "
                                  "constant of its own");
        continue;
      }
      if (axis >= 0) s.tensors.push_back({bias, axis});
    }
    s.chain_values.push_back(n.outputs.empty() ? "" : n.outputs[0]);
    why = finder.Walk(&s, k.chain);
    if (!why.empty()) {
      result.rejected.push_back(absl::StrCat(n.Label(), ": ", why));
      continue;
    }
    result.sections.push_back(std::move(s));
  }
  return result;
}

}  // namespace quantd::pruning
