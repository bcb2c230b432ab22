#include "core/pipeline/export/quantized_graph_builder.h"

namespace quantd {

v1::QuantizedGraph BuildQuantizedGraph(const JobState& state,
                                       const std::string& tpc,
                                       const std::string& tpc_digest) {
  const Graph& g = state.model.graph;
  v1::QuantizedGraph qg;
  qg.set_model_name(g.name);
  qg.set_tpc(tpc);
  qg.set_tpc_digest(tpc_digest);
  qg.set_opset(state.model.DefaultOpset());
  for (const auto& in : g.inputs) qg.add_inputs(in.name);
  for (const auto& out : g.outputs) qg.add_outputs(out.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const NodePlan& p = state.plans[i];
    v1::QuantizedNode* q = qg.add_nodes();
    q->set_name(n.name);
    q->set_op_type(n.op_type);
    for (const auto& s : n.inputs) q->add_inputs(s);
    for (const auto& s : n.outputs) q->add_outputs(s);
    q->set_op_set(p.op_set);
    q->set_fused_group(p.fused_group);
    q->set_candidate_index(p.candidate_index);
    *q->mutable_config() = p.config;
    for (const auto& w : p.weight_results) {
      *q->add_weights() = w;
      if (w.attr() == "kernel_attr") q->set_weights_bits(w.n_bits());
    }
    if (q->weights_bits() == 0 && p.weight_results.size() == 1 &&
        p.weight_results[0].attr() == "pos_attr") {
      q->set_weights_bits(p.weight_results[0].n_bits());
    }
    if (p.quantize_activation) {
      *q->add_activations() = p.activation;
      for (const auto& a : p.extra_activations) *q->add_activations() = a;
      q->set_activation_bits(p.activation.n_bits());
    }
    q->set_float_reason(p.float_reason);
  }
  for (const auto& fg : state.fused_groups) *qg.add_fused_groups() = fg;
  for (const auto& in : g.inputs) {
    auto it = state.input_activations.find(in.name);
    if (it != state.input_activations.end()) {
      *qg.add_input_activations() = it->second;
    }
  }
  return qg;
}

}  // namespace quantd
