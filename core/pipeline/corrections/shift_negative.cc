// MCT's shift-negative correction (mct-reference §2.9): an activation with a
// small negative tail (|min| / T <= shift_negative_ratio) that feeds a linear
// node is shifted up onto an unsigned grid, y' = y + s, and the linear node's
// bias absorbs it, b -= s * sum_{non-output axes} W. The activation itself is
// then quantized at 16 bits, the new Add at the original bits with threshold
// T, unsigned. It runs before mixed precision (MCT 2.3's order): the Add is a
// candidate of the search, at the bits the activation could have taken.
// quantd's shift_negative_constant_add (not MCT's) corrects an Add of a
// constant the same way without a new node: its constant takes the shift.
#include "core/pipeline/corrections/shift_negative.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"
#include "core/pipeline/job/ptq_options.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/quantizers/error_functions.h"
#include "core/quantizers/outlier_filter.h"
#include "core/quantizers/primitives.h"
#include "core/util/status_macros.h"

namespace quantd {

bool IsShiftNegativeOp(const std::string& op_type) {
  static const std::set<std::string> kOps = {"PRelu", "Elu",  "HardSwish",
                                             "Gelu",  "Selu", "LeakyRelu"};
  return kOps.count(op_type) > 0;
}

bool IsShiftNegativeBypass(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "AveragePool" ||
         op == "GlobalAveragePool" || op == "MaxPool" || op == "Dropout" ||
         op == "Squeeze" || op == "Unsqueeze";
}

int ConstantAddOperand(const Graph& g, const Node& n) {
  if (n.op_type != "Add" || n.inputs.size() != 2 || n.outputs.size() != 1) {
    return -1;
  }
  int found = -1;
  for (int k = 0; k < 2; ++k) {
    const Tensor* t = g.FindInitializer(n.inputs[k]);
    if (t == nullptr) continue;
    if (found >= 0 || t->dtype() != DType::kFloat) return -1;
    found = k;
  }
  return found;
}

namespace {

constexpr int kNonLinearBits = 16;  // SHIFT_NEGATIVE_NON_LINEAR_NUM_BITS

using TensorShapes = std::map<std::string, std::vector<int64_t>>;

bool IsSncActivation(const Node& n, const NodePlan& p) {
  return IsShiftNegativeOp(n.op_type) ||
         (n.op_type == "Mul" && p.op_set == "Swish");
}

bool ZeroPadding(const Node& n) {
  for (int64_t p : n.GetInts("pads")) {
    if (p != 0) return false;
  }
  const std::string a = n.GetString("auto_pad", "NOTSET");
  return a == "NOTSET" || a == "VALID";
}

// Explicit pads (auto_pad NOTSET): the padding can move into a Pad node.
bool ExplicitPadding(const Node& n) {
  return n.GetString("auto_pad", "NOTSET") == "NOTSET";
}

// A Gemm whose bias cannot absorb the shift.
bool ScalesBias(const Node& gemm) {
  return gemm.GetInt("transA", 0) != 0 || gemm.GetFloat("alpha", 1) != 1 ||
         gemm.GetFloat("beta", 1) != 1;
}

struct Candidate {
  int node = -1;
  // The operand of the Add whose constant takes the shift
  // (shift_negative_constant_add), or -1: an Add is inserted.
  int constant_input = -1;
  std::vector<int> bypass;
  int linear = -1;
  double shift = 0;
  double threshold = 0;  // of the Add (T, or 2T from the params search)
  // Names: indices move as earlier corrections insert nodes.
  std::string node_name, linear_name;
  std::vector<std::string> bypass_names;
};

int IndexOf(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// MCT's shift_negative_params_search: for T' in {T, 2T} and every point s
// of the unsigned grid of T', the MSE of the histogram shifted by s and
// quantized unsigned with T'; the best (T', s) wins (first on ties).
absl::Status SearchShiftParams(const quantizers::Histogram& histogram, double t,
                               int n_bits, double z_threshold,
                               const CancellationToken* cancel, double* best_t,
                               double* best_shift) {
  quantizers::Histogram h = histogram;
  if (std::isfinite(z_threshold)) {
    ASSIGN_OR_RETURN(h, quantizers::ZScoreFilter(z_threshold, histogram));
  }
  if (h.edges.empty()) return absl::OkStatus();
  const int64_t points = int64_t{1} << n_bits;
  double best = std::numeric_limits<double>::infinity();
  for (double tt : {t, 2 * t}) {
    const double lsb = tt / static_cast<double>(points);
    for (int64_t k = 0; k < points; ++k) {
      // 16-bit grids have 65536 points: poll every 64.
      if (cancel != nullptr && k % 64 == 0) RETURN_IF_ERROR(cancel->Check());
      // np.linspace(0, T - lsb, 2^n).astype(float32)
      const float s = static_cast<float>(
          points > 1 ? (tt - lsb) * static_cast<double>(k) / (points - 1) : 0);
      quantizers::Histogram shifted = h;
      for (double& e : shifted.edges) {
        e = static_cast<float>(static_cast<float>(e) + s);
      }
      shifted.float32_edges = true;
      const std::vector<double> q =
          quantizers::QuantizeTensorF64(shifted.edges, tt, n_bits, false);
      const double err =
          quantizers::HistogramError(quantizers::ErrorMethod::kMse, shifted, q);
      if (err < best) {
        best = err;
        *best_t = tt;
        *best_shift = s;
      }
    }
  }
  return absl::OkStatus();
}

// The activations to correct: each with a small negative tail whose single
// consumers lead through bypass nodes to a linear node; warns about those
// that cannot be corrected.
absl::StatusOr<std::vector<Candidate>> FindCandidates(
    JobState* state, const CancellationToken* cancel) {
  Graph& g = state->model.graph;
  const PtqOptions& o = state->options;
  GraphIndex index(g);
  std::vector<Candidate> found;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    const Node& n = g.nodes[i];
    const NodePlan& p = state->plans[i];
    const bool activation =
        o.shift_negative_activation_correction && IsSncActivation(n, p);
    const int constant =
        o.shift_negative_constant_add ? ConstantAddOperand(g, n) : -1;
    // A TPC that forces a signed grid leaves nothing for an Add's shift to
    // gain.
    if ((!activation && (constant < 0 || p.forced_signed.value_or(false))) ||
        !p.quantize_activation || p.preserving ||
        p.activation.method == v1::QUANTIZATION_METHOD_UNIFORM ||
        n.outputs.empty()) {
      continue;
    }
    auto st = state->stats.find(n.outputs[0]);
    const double t = p.activation.threshold;
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
      if (IsShiftNegativeBypass(m.op_type)) {
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
        if (m.op_type == "Conv" && !ZeroPadding(m) && !ExplicitPadding(m)) {
          why = absl::StrCat(m.Label(), " pads with auto_pad ",
                             m.GetString("auto_pad", ""));
          break;
        }
        if (m.op_type == "Gemm" && ScalesBias(m)) {
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
      // An Add of a constant is corrected where it can be, silently.
      if (activation && why != "not followed by a linear node") {
        state->warnings.push_back(absl::StrCat(
            n.Label(), ": shift-negative correction not applied (", why, ")"));
      }
      continue;
    }
    // Smallest point of the unsigned n-bit grid of T that is >= |min|.
    // A minimum a float32 rounding below the op's known one (FrameworkInfo)
    // is that one: ONNX's HardSwish can give -0.37500003 for -3/8, which
    // would take the next grid point (13/32 instead of MCT's 12/32 at T=8;
    // MCT computes it in torch). Further below, the observed value stands
    // (Elu with alpha > 1 goes below FrameworkInfo's -1).
    double min = st->second.min;
    if (p.known_lower_bound && min < *p.known_lower_bound &&
        min >= *p.known_lower_bound * (1 + 1e-6)) {
      min = *p.known_lower_bound;
    }
    const double delta = t / std::ldexp(1.0, p.activation.n_bits);
    c.shift = std::ceil(-min / delta) * delta;
    c.threshold = t;
    c.constant_input = activation ? -1 : constant;
    if (activation && o.shift_negative_params_search) {
      RETURN_IF_ERROR(SearchShiftParams(
          st->second.histogram, t, p.activation.n_bits,
          state->options.z_threshold, cancel, &c.threshold, &c.shift));
    }
    c.node_name = n.name;
    c.linear_name = g.nodes[c.linear].name;
    for (int b : c.bypass) c.bypass_names.push_back(g.nodes[b].name);
    found.push_back(c);
  }
  return found;
}

// Folds the shift into the bias of linear node `lin`: b -= s * sum over
// non-output axes of W, into a new initializer. False (nothing changed)
// when the bias is computed or of the wrong size.
absl::StatusOr<bool> AbsorbShiftInBias(float shift, Node* linear,
                                       Graph* graph) {
  Graph& g = *graph;
  Node& lin = *linear;
  ASSIGN_OR_RETURN(Tensor w, g.FindInitializer(lin.Input(1))->CastToFloat());
  const bool gemm = lin.op_type == "Gemm";
  const bool trans_b = gemm && lin.GetInt("transB", 0) != 0;
  const int64_t m = gemm ? (trans_b ? w.dim(0) : w.dim(1)) : w.dim(0);
  const int64_t k = w.num_elements() / m;
  std::vector<float> bias(m, 0.0f);
  if (const Tensor* b = g.FindInitializer(lin.Input(2))) {
    ASSIGN_OR_RETURN(Tensor bf, b->CastToFloat());
    if (bf.num_elements() != m) return false;
    for (int64_t j = 0; j < m; ++j) bias[j] = bf.data<float>()[j];
  } else if (!lin.Input(2).empty()) {
    return false;  // a computed bias cannot absorb the shift
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
  return true;
}

// The Pad node (and its plan) that moves a Conv's padding in front of it,
// padding with the shift instead of zero (MCT inserts an explicit Pad): zero
// would be -shift in the original activation. Takes the Conv's pads.
std::pair<Node, NodePlan> MakeShiftPad(float shift, const NodePlan& add_plan,
                                       Node* linear, Graph* graph) {
  Graph& g = *graph;
  Node& lin = *linear;
  std::vector<int64_t> conv_pads = lin.GetInts("pads");
  const int64_t spatial = static_cast<int64_t>(conv_pads.size()) / 2;
  std::vector<int64_t> pads(2 * (spatial + 2), 0);
  for (int64_t d = 0; d < spatial; ++d) {
    pads[2 + d] = conv_pads[d];
    pads[spatial + 4 + d] = conv_pads[spatial + d];
  }
  const std::string pads_name =
      UniqueTensorName(g, absl::StrCat(lin.name, "_snc_pads"));
  g.initializers[pads_name] =
      Tensor::FromVector<int64_t>(pads, {2 * (spatial + 2)});
  const std::string value_name =
      UniqueTensorName(g, absl::StrCat(lin.name, "_snc_pad_value"));
  g.initializers[value_name] = Tensor::FromVector<float>({shift}, {});
  Node pn;
  pn.op_type = "Pad";
  pn.name = UniqueTensorName(g, absl::StrCat(lin.name, "_snc_pad"));
  pn.inputs = {lin.Input(0), pads_name, value_name};
  pn.outputs = {UniqueTensorName(g, absl::StrCat(lin.Input(0), "_padded"))};
  Attribute mode;
  mode.type = Attribute::Type::kString;
  mode.s = "constant";
  pn.attributes["mode"] = mode;
  lin.inputs[0] = pn.outputs[0];
  Attribute zeros;
  zeros.type = Attribute::Type::kInts;
  zeros.ints.assign(conv_pads.size(), 0);
  lin.attributes["pads"] = zeros;
  // The padded tensor holds the shifted values and the shift itself,
  // both points of the Add's grid: it keeps that quantization.
  NodePlan pp;
  pp.op_set = add_plan.op_set;
  pp.config = add_plan.config;
  pp.quantize_activation = true;
  pp.preserving = true;
  pp.preserved_from = pn.inputs[0];
  pp.activation = add_plan.activation;
  pp.activation.tensor = pn.outputs[0];
  pp.activation.preserved_from = pn.inputs[0];
  pp.output_channel_axis = add_plan.output_channel_axis;
  return {std::move(pn), std::move(pp)};
}

// The shape of the Add's output (the activation's), when known. The Pad's
// output gets none, so the resource figures do not count it (unknown sizes
// count 0): MCT leaves the Pad unquantized (2.3) and fuses it into the
// Conv (2.4), so it is no tensor of the activation memory. Its bits still
// price the Conv's BOPs.
void RecordShape(const std::string& activation, const std::string& shifted,
                 TensorShapes* shapes) {
  if (shapes == nullptr) return;
  auto it = shapes->find(activation);
  if (it != shapes->end()) (*shapes)[shifted] = it->second;
}

// Preserving bypass nodes after the corrected tensor `shifted` carry its
// grid `params`.
void CarryGridThroughBypass(const Candidate& c, const std::string& shifted,
                            const ActivationParams& params, JobState* state) {
  const Graph& g = state->model.graph;
  std::string carried = shifted;
  for (int b : c.bypass) {
    NodePlan& bp = state->plans[b];
    if (bp.preserving && !g.nodes[b].outputs.empty()) {
      bp.preserved_from = carried;
      bp.activation = params;
      bp.activation.tensor = g.nodes[b].outputs[0];
      bp.activation.preserved_from = carried;
    }
    carried = g.nodes[b].outputs.empty() ? carried : g.nodes[b].outputs[0];
  }
}

// The input means of the linear node (bias correction) move by the shift,
// from its input before the correction to the one after.
// MCT 2.3's PyTorch SNC does not do this for a Conv2d: it puts a Pad
// before every Conv2d (padding 0 included) and hands it the Add's
// statistics collector before shift_stats_collector replaces the Add's
// with a shifted copy, so its bias correction reads the unshifted mean
// (MCT 2.3.0's export in tests/core/qdq/mctq_fixture_test.cc shows it).
// quantd keeps the shifted, correct mean: copying that stale mean cost
// 2.5 dB of output SQNR on ppocr_cls (imx500@4.1).
void MoveInputMeans(const std::string& before, const std::string& after,
                    double shift, JobState* state) {
  auto mean = state->input_means.find(before);
  if (mean == state->input_means.end()) return;
  std::vector<double> moved = mean->second;
  for (double& v : moved) v += shift;
  state->input_means.erase(mean);
  state->input_means[after] = std::move(moved);
}

// Statistics of a tensor that every value of moves by `shift`, in the
// precision of the histogram's edges.
void ShiftStatistics(double shift, TensorStats* stats) {
  stats->min += shift;
  stats->max += shift;
  quantizers::Histogram& h = stats->histogram;
  for (double& e : h.edges) {
    e = h.float32_edges ? static_cast<float>(static_cast<float>(e) +
                                             static_cast<float>(shift))
                        : e + shift;
  }
}

// Corrects one candidate: the bias, the Add after the activation (and a Pad
// before a padded Conv), the bypass plans, the input means and the
// activation's own 16-bit grid.
absl::Status ApplyCandidate(Candidate& c, JobState* state,
                            TensorShapes* shapes) {
  Graph& g = state->model.graph;
  Node& act = g.nodes[c.node];
  NodePlan& ap = state->plans[c.node];
  const std::string y = act.outputs[0];
  const float shift = static_cast<float>(c.shift);
  // Linear node bias: b -= s * sum over non-output axes of W.
  Node& lin = g.nodes[c.linear];
  const std::string original_lin_in = lin.Input(0);
  ASSIGN_OR_RETURN(const bool absorbed, AbsorbShiftInBias(shift, &lin, &g));
  if (!absorbed) return absl::OkStatus();
  // The Add after the activation.
  const std::string sname =
      UniqueTensorName(g, absl::StrCat(act.name, "_snc_shift"));
  g.initializers[sname] = Tensor::FromVector<float>({shift}, {});
  const std::string shifted = UniqueTensorName(g, absl::StrCat(y, "_shifted"));
  Node add;
  add.op_type = "Add";
  add.name = UniqueTensorName(g, absl::StrCat(act.name, "_snc_add"));
  add.inputs = {y, sname};
  add.outputs = {shifted};
  const int first = c.bypass.empty() ? c.linear : c.bypass.front();
  for (auto& in : g.nodes[first].inputs) {
    if (in == y) in = shifted;
  }
  NodePlan add_plan;
  add_plan.op_set = ap.op_set;
  add_plan.qco = ap.qco;
  add_plan.candidate_index = ap.candidate_index;
  add_plan.config = ap.config;
  add_plan.fixed_threshold = c.threshold;
  add_plan.quantize_activation = true;
  add_plan.activation = ap.activation;
  add_plan.activation.tensor = shifted;
  add_plan.activation.is_signed = false;
  add_plan.activation.threshold = c.threshold;
  add_plan.activation.scale =
      quantizers::CalculateDelta(c.threshold, ap.activation.n_bits, false);
  add_plan.activation.zero_point = 0;
  add_plan.output_channel_axis = ap.output_channel_axis;
  CarryGridThroughBypass(c, shifted, add_plan.activation, state);
  // A padded Conv pads with the shift instead of zero.
  std::optional<std::pair<Node, NodePlan>> pad;
  if (lin.op_type == "Conv" && !ZeroPadding(lin)) {
    pad.emplace(MakeShiftPad(shift, add_plan, &lin, &g));
  }
  MoveInputMeans(original_lin_in, g.nodes[c.linear].Input(0), shift, state);
  // The activation itself at 16 bits. MCT (2.3 to 2.4) only widens the
  // candidates' activation_n_bits: the threshold and signedness stay those
  // selected at the original bits (shift_negative_activation.py; they are
  // recomputed only with threshold recalculation, which quantd rejects).
  // MCT 2.3.0's own export of tests/core/qdq's fixture has T=8 at 16 bits
  // where a 16-bit re-selection gives T=16.
  // Every candidate of the activation is 16-bit (MCT widens them all): the
  // search has nothing to choose there; the Add carries the choice.
  ap.config.set_activation_n_bits(kNonLinearBits);
  for (auto& cfg : *ap.qco.mutable_quantization_configurations()) {
    cfg.set_activation_n_bits(kNonLinearBits);
  }
  if (ap.qco.has_base_config()) {
    ap.qco.mutable_base_config()->set_activation_n_bits(kNonLinearBits);
  }
  ap.activation.n_bits = kNonLinearBits;
  ap.activation.scale = quantizers::CalculateDelta(
      ap.activation.threshold, kNonLinearBits, ap.activation.is_signed);
  ap.activation.zero_point = 0;
  state->warnings.push_back(
      absl::StrCat(act.Label(), ": shift-negative correction, shift ", shift,
                   " absorbed by ", g.nodes[c.linear].Label()));
  RecordShape(y, shifted, shapes);
  if (pad.has_value()) {  // right before the linear node
    g.nodes.insert(g.nodes.begin() + c.linear, std::move(pad->first));
    state->plans.insert(state->plans.begin() + c.linear,
                        std::move(pad->second));
  }
  g.nodes.insert(g.nodes.begin() + c.node + 1, std::move(add));
  state->plans.insert(state->plans.begin() + c.node + 1, std::move(add_plan));
  return absl::OkStatus();
}

// The shift a padded Conv's Pad can carry exactly: a point of the grid the
// Add's statistics select once shifted. Selecting again can widen T (the
// shifted maximum passes it), and the shift then moves up to the wider
// grid's next point; at most three rounds (each shift is >= the last, so
// the minimum stays on or above zero). Without padding any shift does.
absl::StatusOr<double> ShiftOnSelectedGrid(const Candidate& c,
                                           const JobState& state) {
  const Graph& g = state.model.graph;
  const Node& lin = g.nodes[c.linear];
  double shift = c.shift;
  if (lin.op_type != "Conv" || ZeroPadding(lin)) return shift;
  const NodePlan& p = state.plans[c.node];
  const std::string& y = g.nodes[c.node].outputs[0];
  for (int round = 0; round < 3; ++round) {
    TensorStats moved = state.stats.at(y);
    ShiftStatistics(shift, &moved);
    ASSIGN_OR_RETURN(
        const ActivationParams a,
        SelectActivationParams(y, p.config, &moved, p.known_min, p.known_max,
                               p.forced_signed, state.options));
    if (!(a.scale > 0)) break;
    const double point = std::ceil(shift / a.scale) * a.scale;
    if (point == shift) break;
    shift = point;
  }
  return shift;
}

// Corrects an Add of a constant (shift_negative_constant_add): the bias, the
// constant plus the shift (a new initializer: the old one may have other
// readers), the Add's statistics moved by the shift and its parameters
// selected again on them (its grid becomes unsigned; every mixed-precision
// candidate selects from the same statistics), the bypass plans, a Pad
// before a padded Conv, the input means.
absl::Status ApplyToConstantAdd(const Candidate& c, JobState* state,
                                const CancellationToken* cancel) {
  Graph& g = state->model.graph;
  const std::string y = g.nodes[c.node].outputs[0];
  ASSIGN_OR_RETURN(const double on_grid, ShiftOnSelectedGrid(c, *state));
  const float shift = static_cast<float>(on_grid);
  Node& lin = g.nodes[c.linear];
  const std::string original_lin_in = lin.Input(0);
  ASSIGN_OR_RETURN(const bool absorbed, AbsorbShiftInBias(shift, &lin, &g));
  if (!absorbed) return absl::OkStatus();
  Node& add = g.nodes[c.node];
  std::string& operand = add.inputs[c.constant_input];
  Tensor constant = *g.FindInitializer(operand);
  for (float& v : constant.mutable_span<float>()) v += shift;
  operand = UniqueTensorName(g, absl::StrCat(operand, "_snc_shifted"));
  g.initializers[operand] = std::move(constant);
  ShiftStatistics(shift, &state->stats[y]);
  RETURN_IF_ERROR(SelectNodeParams(c.node, state, cancel));
  const NodePlan ap = state->plans[c.node];
  CarryGridThroughBypass(c, y, ap.activation, state);
  std::optional<std::pair<Node, NodePlan>> pad;
  if (lin.op_type == "Conv" && !ZeroPadding(lin)) {
    pad.emplace(MakeShiftPad(shift, ap, &lin, &g));
  }
  MoveInputMeans(original_lin_in, lin.Input(0), shift, state);
  state->warnings.push_back(absl::StrCat(
      g.nodes[c.node].Label(), ": shift-negative correction, shift ", shift,
      " added to its constant, absorbed by ", lin.Label()));
  if (pad.has_value()) {  // right before the linear node
    g.nodes.insert(g.nodes.begin() + c.linear, std::move(pad->first));
    state->plans.insert(state->plans.begin() + c.linear,
                        std::move(pad->second));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyShiftNegativeCorrection(JobState* state, TensorShapes* shapes,
                                          const CancellationToken* cancel) {
  Graph& g = state->model.graph;
  ASSIGN_OR_RETURN(std::vector<Candidate> found, FindCandidates(state, cancel));
  // Apply from the last node back so earlier indices stay valid.
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    Candidate& c = *it;
    c.node = IndexOf(g, c.node_name);
    c.linear = IndexOf(g, c.linear_name);
    for (size_t b = 0; b < c.bypass.size(); ++b) {
      c.bypass[b] = IndexOf(g, c.bypass_names[b]);
    }
    RETURN_IF_ERROR(c.constant_input >= 0 ? ApplyToConstantAdd(c, state, cancel)
                                          : ApplyCandidate(c, state, shapes));
  }
  RemoveUnusedInitializers(&g);
  return absl::OkStatus();
}

int ShiftNegativeInsertedTensors(const Node& linear) {
  if (linear.op_type == "Gemm") return ScalesBias(linear) ? 0 : 1;
  if (linear.op_type != "Conv") return 0;
  if (ZeroPadding(linear)) return 1;
  return ExplicitPadding(linear) ? 2 : 0;
}

}  // namespace quantd
