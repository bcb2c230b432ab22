// MCT's shift-negative correction (mct-reference §2.9): an activation with a
// small negative tail (|min| / T <= shift_negative_ratio) that feeds a linear
// node is shifted up onto an unsigned grid, y' = y + s, and the linear node's
// bias absorbs it, b -= s * sum_{non-output axes} W. The activation itself is
// then quantized at 16 bits, the new Add at the original bits with threshold
// T, unsigned.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"
#include "core/pipeline/param_selection.h"
#include "core/pipeline/stages.h"
#include "core/quantizers/primitives.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

constexpr int kNonLinearBits = 16;  // SHIFT_NEGATIVE_NON_LINEAR_NUM_BITS

bool IsSncActivation(const Node& n, const NodePlan& p) {
  static const std::set<std::string> kOps = {"PRelu", "Elu",  "HardSwish",
                                             "Gelu",  "Selu", "LeakyRelu"};
  return kOps.count(n.op_type) > 0 ||
         (n.op_type == "Mul" && p.op_set == "Swish");
}

bool IsBypass(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "AveragePool" ||
         op == "GlobalAveragePool" || op == "MaxPool" || op == "Dropout" ||
         op == "Squeeze" || op == "Unsqueeze";
}

bool ZeroPadding(const Node& n) {
  for (int64_t p : n.GetInts("pads")) {
    if (p != 0) return false;
  }
  const std::string a = n.GetString("auto_pad", "NOTSET");
  return a == "NOTSET" || a == "VALID";
}

struct Candidate {
  int node = -1;
  std::vector<int> bypass;
  int linear = -1;
  double shift = 0;
};

}  // namespace

absl::Status ApplyShiftNegativeCorrection(JobState* state) {
  Graph& g = state->model.graph;
  GraphIndex index(g);
  std::vector<Candidate> found;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const NodePlan& p = state->plans[i];
    if (!IsSncActivation(n, p) || !p.quantize_activation || p.preserving ||
        p.activation.method() == v1::QUANTIZATION_METHOD_UNIFORM ||
        n.outputs.empty()) {
      continue;
    }
    auto st = state->stats.find(n.outputs[0]);
    const double t = p.activation.threshold();
    if (st == state->stats.end() || !(st->second.min < 0) || !(t > 0)) {
      continue;
    }
    if (-st->second.min / t > state->options.shift_negative_ratio) continue;
    // Walk single consumers through bypass nodes to a linear node.
    Candidate c;
    c.node = static_cast<int>(i);
    int cur = static_cast<int>(i);
    std::string why;
    while (true) {
      const int next = index.SoleConsumer(cur);
      if (next < 0) {
        why = "output has several consumers";
        break;
      }
      const Node& m = g.nodes[next];
      if (IsBypass(m.op_type)) {
        const NodePlan& mp = state->plans[next];
        if (mp.quantize_activation && !mp.preserving) {
          why = absl::StrCat("bypass ", m.Label(), " has its own quantization");
          break;
        }
        c.bypass.push_back(next);
        cur = next;
        continue;
      }
      if ((m.op_type == "Conv" || m.op_type == "Gemm") &&
          g.FindInitializer(m.Input(1)) != nullptr) {
        if (m.op_type == "Conv" && !ZeroPadding(m)) {
          why = absl::StrCat(m.Label(), " pads with zeros");
          break;
        }
        if (m.op_type == "Gemm" &&
            (m.GetInt("transA", 0) != 0 || m.GetFloat("alpha", 1) != 1 ||
             m.GetFloat("beta", 1) != 1)) {
          why = absl::StrCat(m.Label(), " scales its bias");
          break;
        }
        c.linear = next;
      } else {
        why = "not followed by a linear node";
      }
      break;
    }
    if (c.linear < 0) {
      if (why != "not followed by a linear node") {
        state->warnings.push_back(absl::StrCat(
            n.Label(), ": shift-negative correction not applied (", why, ")"));
      }
      continue;
    }
    // Smallest point of the unsigned n-bit grid of T that is >= |min|.
    const double delta = t / std::ldexp(1.0, p.activation.n_bits());
    c.shift = std::ceil(-st->second.min / delta) * delta;
    found.push_back(c);
  }
  // Apply from the last node back so earlier indices stay valid.
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    const Candidate& c = *it;
    Node& act = g.nodes[c.node];
    NodePlan& ap = state->plans[c.node];
    const std::string y = act.outputs[0];
    const float shift = static_cast<float>(c.shift);
    // Linear node bias: b -= s * sum over non-output axes of W.
    Node& lin = g.nodes[c.linear];
    ASSIGN_OR_RETURN(Tensor w, g.FindInitializer(lin.Input(1))->CastToFloat());
    const bool gemm = lin.op_type == "Gemm";
    const bool trans_b = gemm && lin.GetInt("transB", 0) != 0;
    const int64_t m = gemm ? (trans_b ? w.dim(0) : w.dim(1)) : w.dim(0);
    const int64_t k = w.num_elements() / m;
    std::vector<float> bias(m, 0.0f);
    if (const Tensor* b = g.FindInitializer(lin.Input(2))) {
      ASSIGN_OR_RETURN(Tensor bf, b->CastToFloat());
      if (bf.num_elements() != m) continue;
      for (int64_t j = 0; j < m; ++j) bias[j] = bf.data<float>()[j];
    } else if (!lin.Input(2).empty()) {
      continue;  // a computed bias cannot absorb the shift
    }
    const float* wd = w.data<float>();
    for (int64_t o = 0; o < m; ++o) {
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        sum += gemm && !trans_b ? wd[j * m + o] : wd[o * k + j];
      }
      bias[o] = static_cast<float>(bias[o] - shift * sum);
    }
    const std::string bname =
        UniqueTensorName(g, absl::StrCat(lin.name, "_bias_snc"));
    g.initializers[bname] = Tensor::FromVector<float>(bias, {m});
    if (lin.inputs.size() < 3) lin.inputs.resize(3);
    lin.inputs[2] = bname;
    // The Add after the activation.
    const std::string sname =
        UniqueTensorName(g, absl::StrCat(act.name, "_snc_shift"));
    g.initializers[sname] = Tensor::FromVector<float>({shift}, {});
    const std::string shifted =
        UniqueTensorName(g, absl::StrCat(y, "_shifted"));
    Node add;
    add.op_type = "Add";
    add.name = UniqueTensorName(g, absl::StrCat(act.name, "_snc_add"));
    add.inputs = {y, sname};
    add.outputs = {shifted};
    const int first = c.bypass.empty() ? c.linear : c.bypass.front();
    for (auto& in : g.nodes[first].inputs) {
      if (in == y) in = shifted;
    }
    if (!c.bypass.empty()) {
      NodePlan& bp = state->plans[first];
      if (bp.preserved_from == y) bp.preserved_from = shifted;
    }
    // Input means of the linear node move by the shift (bias correction).
    const std::string lin_in = g.nodes[c.linear].Input(0);
    auto mean = state->input_means.find(c.bypass.empty() ? y : lin_in);
    if (mean != state->input_means.end()) {
      std::vector<double> moved = mean->second;
      for (double& v : moved) v += shift;
      state->input_means.erase(mean);
      state->input_means[lin_in] = std::move(moved);
    }
    NodePlan add_plan;
    add_plan.op_set = ap.op_set;
    add_plan.config = ap.config;
    add_plan.quantize_activation = true;
    add_plan.activation = ap.activation;
    add_plan.activation.set_tensor(shifted);
    add_plan.activation.set_is_signed(false);
    add_plan.activation.set_scale(quantizers::CalculateDelta(
        ap.activation.threshold(), ap.activation.n_bits(), false));
    add_plan.activation.set_zero_point(0);
    add_plan.output_channel_axis = ap.output_channel_axis;
    // The activation itself at 16 bits from its own statistics.
    v1::OpQuantizationConfig wide = ap.config;
    wide.set_activation_n_bits(kNonLinearBits);
    ASSIGN_OR_RETURN(
        v1::ActivationQuantization a16,
        SelectActivationParams(y, wide, &state->stats[y], ap.known_min,
                               ap.known_max, ap.forced_signed, state->options));
    ap.config = wide;
    ap.activation = a16;
    state->warnings.push_back(
        absl::StrCat(act.Label(), ": shift-negative correction, shift ", shift,
                     " absorbed by ", g.nodes[c.linear].Label()));
    g.nodes.insert(g.nodes.begin() + c.node + 1, std::move(add));
    state->plans.insert(state->plans.begin() + c.node + 1, std::move(add_plan));
  }
  RemoveUnusedInitializers(&g);
  return absl::OkStatus();
}

}  // namespace quantd
