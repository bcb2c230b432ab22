// MCT's post-statistics substitutions (mct-reference §1.2 step 10, §1.3):
// softmax shift and concat threshold update. Both run after parameter
// selection and before shift-negative correction, as in MCT.
#include "core/pipeline/corrections/post_statistics.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/quantizers/primitives.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

bool HasThreshold(v1::QuantizationMethod m) {
  return m == v1::QUANTIZATION_METHOD_POWER_OF_TWO ||
         m == v1::QUANTIZATION_METHOD_SYMMETRIC;
}

}  // namespace

absl::Status ApplySoftmaxShift(JobState* state) {
  Graph& g = state->model.graph;
  GraphIndex index(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& lin = g.nodes[i];
    NodePlan& p = state->plans[i];
    if ((lin.op_type != "Conv" && lin.op_type != "Gemm" &&
         lin.op_type != "ConvTranspose") ||
        !p.quantize_activation || p.preserving || lin.outputs.empty()) {
      continue;
    }
    const int next = index.SoleConsumer(static_cast<int>(i));
    if (next < 0 || g.nodes[next].op_type != "Softmax") continue;
    const Tensor* w = g.FindInitializer(lin.Input(1));
    if (w == nullptr || w->rank() < 2) continue;
    if (lin.op_type == "Gemm" &&
        (lin.GetInt("transA", 0) != 0 || lin.GetFloat("beta", 1.0f) != 1.0f)) {
      continue;
    }
    auto st = state->stats.find(lin.outputs[0]);
    if (st == state->stats.end()) continue;
    // One shift for the whole tensor (MCT: the per-channel collector's
    // overall min and max): softmax is invariant to it.
    const double shift = -(st->second.max + st->second.min) / 2;
    int64_t m = 0;
    if (lin.op_type == "Conv") {
      m = w->dim(0);
    } else if (lin.op_type == "ConvTranspose") {
      m = w->dim(1) * lin.GetInt("group", 1);
    } else {
      m = lin.GetInt("transB", 0) != 0 ? w->dim(0) : w->dim(1);
    }
    std::vector<float> bias(m, 0.0f);
    if (!lin.Input(2).empty()) {
      const Tensor* b = g.FindInitializer(lin.Input(2));
      if (b == nullptr || b->num_elements() != m) continue;
      ASSIGN_OR_RETURN(Tensor bf, b->CastToFloat());
      for (int64_t c = 0; c < m; ++c) bias[c] = bf.data<float>()[c];
    }
    for (float& v : bias) v = static_cast<float>(v + shift);
    const std::string name =
        UniqueTensorName(g, absl::StrCat(lin.name, "_bias_softmax_shift"));
    g.initializers[name] = Tensor::FromVector<float>(bias, {m});
    if (lin.inputs.size() < 3) lin.inputs.resize(3);
    lin.inputs[2] = name;
    // The collected statistics move with the output.
    TensorStats& s = st->second;
    for (double& e : s.histogram.edges) e += shift;
    s.min += shift;
    s.max += shift;
    ASSIGN_OR_RETURN(
        p.activation,
        SelectActivationParams(lin.outputs[0], p.config, &s, p.known_min,
                               p.known_max, p.forced_signed, state->options));
    state->warnings.push_back(absl::StrCat(lin.Label(), ": softmax shift ",
                                           shift, " added to the bias"));
  }
  RemoveUnusedInitializers(&g);
  return absl::OkStatus();
}

absl::Status ApplyConcatThresholdUpdate(JobState* state) {
  Graph& g = state->model.graph;
  GraphIndex index(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& concat = g.nodes[i];
    const NodePlan& cp = state->plans[i];
    if (concat.op_type != "Concat" || !cp.quantize_activation ||
        !HasThreshold(cp.activation.method)) {
      continue;
    }
    const double t = cp.activation.threshold;
    for (const std::string& in : concat.inputs) {
      const int prev = index.Producer(in);
      if (prev < 0 || index.NumUses(in) != 1 ||
          g.nodes[prev].op_type == "Concat") {
        continue;
      }
      NodePlan& pp = state->plans[prev];
      if (!pp.quantize_activation || pp.preserving ||
          g.nodes[prev].outputs.empty() || g.nodes[prev].outputs[0] != in ||
          !HasThreshold(pp.activation.method) || pp.activation.threshold == t) {
        continue;
      }
      pp.activation.threshold = t;
      pp.activation.scale = quantizers::CalculateDelta(t, pp.activation.n_bits,
                                                       pp.activation.is_signed);
      state->warnings.push_back(
          absl::StrCat(g.nodes[prev].Label(), ": threshold set to ", t, " of ",
                       concat.Label(), " (concat_threshold_update)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
