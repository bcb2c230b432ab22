// TPC attachment and the plan rules that follow from it (stages.h).
#include "core/pipeline/prep/attach.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/graph_index.h"
#include "core/graph/pattern_matcher.h"
#include "core/pipeline/prep/node_filter.h"
#include "core/pipeline/prep/op_config_bits.h"
#include "core/tpc/framework_info.h"
#include "core/tpc/onnx_opset_mapping.h"
#include "core/tpc/op_view.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/message_differencer.h"

namespace quantd {
namespace {

int CountNodes(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes) {
    ++n;
    for (const auto& [key, a] : node.attributes) {
      if (a.g) n += CountNodes(*a.g);
    }
  }
  return n;
}

// Control flow (If, Loop, Scan): only the top-level graph is quantized, so
// the nodes of a body run in float. The report must say so.
std::string SubgraphFloatReason(const Node& node) {
  std::vector<std::string> parts;
  for (const auto& [key, a] : node.attributes) {
    if (a.g) {
      parts.push_back(
          absl::StrCat("'", key, "' (", CountNodes(*a.g), " nodes)"));
    }
  }
  if (parts.empty()) return "";
  return absl::StrCat("subgraph ", absl::StrJoin(parts, ", "),
                      " runs in float");
}

// Adds `why` (if any) to the node's reasons for staying float.
void AppendReason(std::string* reason, const std::string& why) {
  if (why.empty()) return;
  *reason = reason->empty() ? why : absl::StrCat(*reason, "; ", why);
}

tpc::OpView MakeOpView(const Node& node, const Graph& g) {
  tpc::OpView v;
  v.name = node.name;
  v.op_type = node.op_type;
  v.domain = node.domain == "ai.onnx" ? "" : node.domain;
  for (const auto& [key, a] : node.attributes) {
    switch (a.type) {
      case Attribute::Type::kInt:
        v.attributes[key] = a.i;
        break;
      case Attribute::Type::kFloat:
        v.attributes[key] = static_cast<double>(a.f);
        break;
      case Attribute::Type::kString:
        v.attributes[key] = a.s;
        break;
      case Attribute::Type::kInts:
        v.attributes[key] = a.ints;
        break;
      case Attribute::Type::kFloats:
        v.attributes[key] =
            std::vector<double>(a.floats.begin(), a.floats.end());
        break;
      default:
        break;
    }
  }
  for (const auto& in : node.inputs) {
    tpc::OpInput oi;
    oi.present = !in.empty();
    const Tensor* t = g.FindInitializer(in);
    if (t != nullptr) {
      oi.is_constant = true;
      oi.shape = t->shape();
      if (t->num_elements() == 1) {
        auto f = t->CastToFloat();
        if (f.ok()) oi.scalar_value = f->data<float>()[0];
      }
    }
    v.inputs.push_back(std::move(oi));
  }
  // Channel counts from the kernel (Conv W [M, C/g, ...]; ConvTranspose
  // W [C, M/g, ...]; Gemm/MatMul from the weight layout).
  const Tensor* w = g.FindInitializer(node.Input(1));
  if (w != nullptr && w->rank() >= 2) {
    const int64_t group = node.GetInt("group", 1);
    if (node.op_type == "Conv") {
      v.out_channels = w->dim(0);
      v.in_channels = w->dim(1) * group;
    } else if (node.op_type == "ConvTranspose") {
      v.in_channels = w->dim(0);
      v.out_channels = w->dim(1) * group;
    } else if (node.op_type == "Gemm") {
      const bool tb = node.GetInt("transB", 0) != 0;
      v.out_channels = tb ? w->dim(0) : w->dim(1);
      v.in_channels = tb ? w->dim(1) : w->dim(0);
    } else if (node.op_type == "MatMul") {
      v.in_channels = w->dim(w->rank() - 2);
      v.out_channels = w->dim(w->rank() - 1);
    }
  }
  return v;
}

bool SameConfig(const v1::OpQuantizationConfig& a,
                const v1::OpQuantizationConfig& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// Picks the node's configuration: the base config, or with
// `kernel_weights_bits` the candidate with those kernel bits (and the base
// activation bits when possible).
absl::Status ChooseConfig(const Node& node,
                          const v1::QuantizationConfigOptions& qco,
                          int kernel_weights_bits, NodePlan* p) {
  const auto& configs = qco.quantization_configurations();
  if (configs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Label(), ": op set '", p->op_set,
                     "' has no quantization configurations"));
  }
  v1::OpQuantizationConfig base =
      qco.has_base_config() ? qco.base_config() : configs[0];
  int index = 0;
  for (int i = 0; i < configs.size(); ++i) {
    if (SameConfig(configs[i], base)) index = i;
  }
  if (kernel_weights_bits > 0 && KernelBits(base) > 0 &&
      KernelBits(base) != kernel_weights_bits) {
    int best = -1;
    for (int i = 0; i < configs.size(); ++i) {
      if (KernelBits(configs[i]) != kernel_weights_bits) continue;
      if (best < 0 ||
          (configs[i].activation_n_bits() == base.activation_n_bits() &&
           configs[best].activation_n_bits() != base.activation_n_bits())) {
        best = i;
      }
    }
    if (best < 0) {
      std::set<int> have;
      for (const auto& c : configs) have.insert(KernelBits(c));
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": op set '", p->op_set, "' has no ",
                       kernel_weights_bits, "-bit kernel candidate (has ",
                       absl::StrJoin(have, ", "), ")"));
    }
    index = best;
    base = configs[best];
  }
  p->candidate_index = index;
  p->config = base;
  return absl::OkStatus();
}

// Mul / Div / Add / Sub with a float constant operand: the output's values
// are not the input's.
bool ScalesOrShiftsByAConstant(const Node& node, const Graph& g) {
  static const std::set<std::string> kOps = {"Mul", "Div", "Add", "Sub"};
  if (!kOps.count(node.op_type)) return false;
  for (const auto& in : node.inputs) {
    const Tensor* t = in.empty() ? nullptr : g.FindInitializer(in);
    if (t != nullptr &&
        (t->dtype() == DType::kFloat || t->dtype() == DType::kDouble ||
         t->dtype() == DType::kFloat16)) {
      return true;
    }
  }
  return false;
}

// Attaches node `node` of `g`: its op set, candidates, config, weights and
// known ranges, and why it stays float.
absl::Status AttachNode(const Node& node, const Graph& g,
                        const tpc::OnnxTpcAttachment& attachment,
                        const tpc::OnnxFrameworkInfo& fi,
                        int kernel_weights_bits, NodePlan* plan) {
  NodePlan& p = *plan;
  tpc::OpView view = MakeOpView(node, g);
  ASSIGN_OR_RETURN(tpc::AttachedOp op, attachment.Attach(view));
  p.op_set = op.op_set;
  p.qco = *op.qco;
  RETURN_IF_ERROR(ChooseConfig(node, p.qco, kernel_weights_bits, &p));
  p.output_channel_axis = fi.OutputChannelAxis(node.op_type);
  if (fi.IsNoQuantizationOp(node.op_type)) {
    p.float_reason = "no-quantization op (FrameworkInfo)";
    AppendReason(&p.float_reason, SubgraphFloatReason(node));
    return absl::OkStatus();
  }
  p.quantize_activation =
      p.config.enable_activation_quantization() && !node.outputs.empty();
  p.preserving = p.config.quantization_preserving() && !node.outputs.empty();
  if (p.config.signedness() == v1::SIGNEDNESS_SIGNED) p.forced_signed = true;
  if (p.config.signedness() == v1::SIGNEDNESS_UNSIGNED) {
    p.forced_signed = false;
  }
  if (auto r = fi.KnownOutputRange(node.op_type)) {
    p.known_lower_bound = r->min;
    if (r->bounded()) {
      p.known_min = r->min;
      p.known_max = r->max;
    }
  }
  if (p.preserving) {
    // An integer input computed at run time (Reshape's shape kept
    // because it depends on a dynamic dimension) is no activation: MCT's
    // graph holds such shapes as attributes.
    std::vector<std::string> activation_inputs;
    for (const auto& in : node.inputs) {
      if (in.empty() || g.IsConstant(in)) continue;
      auto type = g.value_info.find(in);
      if (type != g.value_info.end() && (type->second.dtype == DType::kInt64 ||
                                         type->second.dtype == DType::kInt32 ||
                                         type->second.dtype == DType::kBool)) {
        continue;
      }
      activation_inputs.push_back(in);
    }
    if (activation_inputs.size() != 1) {
      // MCT disables preserving with != 1 input: the output stays float.
      p.preserving = false;
      p.float_reason =
          absl::StrCat("quantization preserving with ",
                       activation_inputs.size(), " activation inputs");
    } else if (p.quantize_activation && ScalesOrShiftsByAConstant(node, g)) {
      // The config enables both (MCT rejects that on a node; its TFLite TPC
      // has it on Mul): the input's grid cannot hold an output scaled or
      // shifted by a constant (ppocr_rec's learnable x * 0.03 collapsed to
      // 0 and x * 3.2 clipped), so the output is quantized on its own.
      p.preserving = false;
    } else {
      p.preserved_from = activation_inputs[0];
    }
  }
  if (!p.quantize_activation && !p.preserving && p.float_reason.empty()) {
    p.float_reason =
        p.op_set.empty()
            ? "TPC default config: activation not quantized"
            : absl::StrCat("op set '", p.op_set, "': activation not quantized");
  }
  std::optional<tpc::KernelChannels> kernel = fi.Kernel(view);
  bool float_weights = false;
  for (int k = 0; k < static_cast<int>(node.inputs.size()); ++k) {
    const Tensor* t = g.FindInitializer(node.Input(k));
    if (t == nullptr || t->dtype() != DType::kFloat) continue;
    const v1::AttributeQuantizationConfig& wc =
        tpc::WeightConfigForInput(op, p.config, k);
    if (!wc.enable_weights_quantization() ||
        wc.weights_n_bits() > kMaxWeightBits) {
      float_weights = true;
      continue;
    }
    WeightSlot slot;
    slot.input_index = k;
    slot.config = wc;
    slot.attr = "pos_attr";
    for (const auto& [attr, input] : op.attr_inputs) {
      if (input == k) slot.attr = attr;
    }
    if (kernel && kernel->weight_input == k) {
      slot.channel_axis = kernel->out_channel_axis;
    }
    p.weights.push_back(std::move(slot));
  }
  if (float_weights && p.op_set.empty() && p.weights.empty()) {
    AppendReason(&p.float_reason,
                 "op not covered by the TPC: weights stay float");
  }
  AppendReason(&p.float_reason, SubgraphFloatReason(node));
  return absl::OkStatus();
}

// Fusing: TPC patterns over the attached op sets. Inner nodes of a match
// take the fusing's activation config, or stay float.
void ApplyFusing(const v1::TargetPlatformCapabilities& tpc,
                 const std::map<std::string, int>& index_of, JobState* state) {
  Graph& g = state->model.graph;
  std::vector<FusionPattern> patterns;
  std::vector<const v1::Fusing*> fusings;
  for (const v1::Fusing& f : tpc.fusing_patterns()) {
    FusionPattern fp;
    std::vector<std::string> names;
    for (const v1::FusingGroup& group : f.operator_groups()) {
      std::set<std::string> sets;
      std::vector<std::string> members;
      if (group.has_operators_set()) {
        sets.insert(group.operators_set().name());
        members.push_back(group.operators_set().name());
      } else {
        for (const auto& s : group.operator_set_group().operators_set()) {
          sets.insert(s.name());
          members.push_back(s.name());
        }
      }
      names.push_back(group.has_operator_set_group() &&
                              group.operator_set_group().has_name()
                          ? group.operator_set_group().name()
                          : absl::StrJoin(members, "_"));
      fp.nodes.push_back([sets, state, &index_of](const Node& n) {
        auto it = index_of.find(n.name);
        return it != index_of.end() &&
               sets.count(state->plans[it->second].op_set) > 0;
      });
    }
    fp.name = f.has_name() ? f.name() : absl::StrJoin(names, "_");
    patterns.push_back(std::move(fp));
    fusings.push_back(&f);
  }
  if (!patterns.empty()) {
    std::map<std::string, int> counts;
    for (const PatternMatch& m : MatchPatterns(g, patterns)) {
      const v1::Fusing& f = *fusings[m.pattern];
      const std::string base = patterns[m.pattern].name;
      v1::FusedGroup group;
      group.set_name(absl::StrCat(base, "_", counts[base]++));
      for (int n : m.nodes) group.add_nodes(g.nodes[n].name);
      const bool inner_quant =
          f.has_fuse_op_quantization_config() &&
          f.fuse_op_quantization_config().enable_activation_quantization();
      for (size_t k = 0; k < m.nodes.size(); ++k) {
        NodePlan& p = state->plans[m.nodes[k]];
        p.fused_group = group.name();
        if (k + 1 == m.nodes.size()) continue;
        p.fused_inner = true;
        if (inner_quant) {
          // v2: inner outputs quantized with the fusing's own config.
          const auto& fc = f.fuse_op_quantization_config();
          p.config.set_activation_quantization_method(
              fc.activation_quantization_method());
          p.config.set_activation_n_bits(fc.activation_n_bits());
          p.config.set_signedness(fc.signedness());
          p.quantize_activation = true;
          p.preserving = false;
        } else {
          p.quantize_activation = false;
          p.preserving = false;
          p.float_reason = absl::StrCat("inside fused group ", group.name());
        }
      }
      state->fused_groups.push_back(std::move(group));
    }
  }
}

// Next-node input-bits filter: a node's activation bits may not exceed
// what every consumer accepts (through quantization-preserving nodes).
absl::Status ApplyInputBitsFilter(JobState* state) {
  Graph& g = state->model.graph;
  GraphIndex index(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = state->plans[i];
    if (!p.quantize_activation || p.preserving) continue;
    int limit = 1 << 30;
    std::vector<int> frontier = index.Consumers(g.nodes[i].outputs[0]);
    std::set<int> seen;
    while (!frontier.empty()) {
      int c = frontier.back();
      frontier.pop_back();
      if (!seen.insert(c).second) continue;
      const NodePlan& cp = state->plans[c];
      limit = std::min(limit, MaxSupportedInputBits(cp.config));
      if (cp.preserving && !g.nodes[c].outputs.empty()) {
        for (int n : index.Consumers(g.nodes[c].outputs[0])) {
          frontier.push_back(n);
        }
      }
    }
    if (p.config.activation_n_bits() <= limit) continue;
    int best = -1;
    const auto& configs = p.qco.quantization_configurations();
    for (int k = 0; k < configs.size(); ++k) {
      if (configs[k].activation_n_bits() > limit) continue;
      if (KernelBits(configs[k]) != KernelBits(p.config)) continue;
      if (best < 0 ||
          configs[k].activation_n_bits() > configs[best].activation_n_bits()) {
        best = k;
      }
    }
    if (best < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          g.nodes[i].Label(), ": its ", p.config.activation_n_bits(),
          "-bit output feeds a node accepting at most ", limit,
          " bits, and op set '", p.op_set, "' has no such candidate"));
    }
    const bool fused = p.fused_inner;
    p.candidate_index = best;
    v1::OpQuantizationConfig chosen = configs[best];
    if (fused) {  // keep the fusing's activation settings
      chosen.set_activation_quantization_method(
          p.config.activation_quantization_method());
      chosen.set_activation_n_bits(
          std::min(p.config.activation_n_bits(), limit));
    }
    p.config = chosen;
  }
  return absl::OkStatus();
}

// quantization.keep_float (ORT's nodes_to_exclude): the matching nodes keep
// float weights and outputs, whatever the TPC and the fusing say. Filters
// that match no node are warnings.
void ApplyKeepFloat(const std::vector<NodeFilter>& keep_float,
                    JobState* state) {
  const Graph& g = state->model.graph;
  for (size_t k = 0; k < keep_float.size(); ++k) {
    const NodeFilter& f = keep_float[k];
    const std::string text = NodeFilterText(f);
    int matched = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!MatchesNodeFilter(f, g.nodes[i])) continue;
      ++matched;
      NodePlan& p = state->plans[i];
      p.quantize_activation = false;
      p.preserving = false;
      p.preserved_from.clear();
      p.weights.clear();
      p.float_reason = absl::StrCat("kept float (keep_float ", text, ")");
    }
    if (matched == 0) {
      state->unmatched_filters.push_back(
          absl::StrCat("quantization.keep_float[", k, "] (", text, ")"));
      state->warnings.push_back(
          absl::StrCat(state->unmatched_filters.back(), ": matches no node"));
    }
  }
}

}  // namespace

absl::Status AttachTpc(tpc::TpcPtr tpc_ptr, const AttachOptions& options,
                       JobState* state) {
  const v1::TargetPlatformCapabilities& tpc = *tpc_ptr;
  const v1::OpsetLayerMapping* custom =
      options.custom_opset_mapping ? &*options.custom_opset_mapping : nullptr;
  auto attachment = tpc::OnnxTpcAttachment::Create(tpc_ptr, custom);
  if (!attachment.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tpc does not fit ONNX: ", attachment.status().message()));
  }
  const tpc::OnnxFrameworkInfo& fi = options.framework_info;
  Graph& g = state->model.graph;
  state->plans.assign(g.nodes.size(), NodePlan());
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < g.nodes.size(); ++i) index_of[g.nodes[i].name] = i;

  // Op set, candidates, config, weights, ranges per node.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    RETURN_IF_ERROR(AttachNode(g.nodes[i], g, *attachment, fi,
                               options.kernel_weights_bits, &state->plans[i]));
  }

  ApplyFusing(tpc, index_of, state);
  RETURN_IF_ERROR(ApplyInputBitsFilter(state));
  ApplyKeepFloat(options.keep_float, state);

  // Graph inputs: MCT's input layer takes the default config.
  if (tpc.default_qco().quantization_configurations_size() > 0) {
    const v1::OpQuantizationConfig& d =
        tpc.default_qco().quantization_configurations(0);
    if (d.enable_activation_quantization()) state->input_config = d;
  }
  return absl::OkStatus();
}

}  // namespace quantd
