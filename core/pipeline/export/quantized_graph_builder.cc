#include "core/pipeline/export/quantized_graph_builder.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "core/tpc/attribute_names.h"

namespace quantd {
namespace {

// The int32 values in `storage`, raw little-endian bytes.
v1::Tensor IntTensor(const Tensor& ints, DType storage,
                     const std::string& name) {
  v1::Tensor t;
  t.set_name(name);
  t.set_data_type(static_cast<v1::DataType>(storage));
  for (int64_t d : ints.shape()) t.add_dims(d);
  const int64_t n = ints.num_elements();
  const int32_t* v = ints.data<int32_t>();
  std::string raw;
  if (storage == DType::kInt8 || storage == DType::kUint8) {
    raw.resize(n);
    for (int64_t i = 0; i < n; ++i) raw[i] = static_cast<char>(v[i]);
  } else if (storage == DType::kInt16 || storage == DType::kUint16) {
    raw.resize(n * 2);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t u = static_cast<uint16_t>(v[i]);
      std::memcpy(&raw[2 * i], &u, 2);
    }
  } else {
    raw.resize(n * 4);
    std::memcpy(raw.data(), v, raw.size());
  }
  t.set_raw_data(std::move(raw));
  return t;
}

}  // namespace

v1::ActivationQuantization ToProto(const ActivationParams& a) {
  v1::ActivationQuantization q;
  q.set_tensor(a.tensor);
  q.set_method(a.method);
  q.set_n_bits(a.n_bits);
  q.set_is_signed(a.is_signed);
  q.set_threshold(a.threshold);
  q.set_range_min(a.range_min);
  q.set_range_max(a.range_max);
  q.set_scale(a.scale);
  q.set_zero_point(a.zero_point);
  for (float v : a.lut_values) q.add_lut_values(v);
  q.set_preserved_from(a.preserved_from);
  return q;
}

v1::WeightQuantization ToProto(const WeightParams& w) {
  v1::WeightQuantization q;
  q.set_attr(w.attr);
  q.set_input_index(w.input_index);
  q.set_tensor(w.tensor);
  q.set_method(w.method);
  q.set_n_bits(w.n_bits);
  q.set_per_channel(w.per_channel);
  q.set_channel_axis(w.channel_axis);
  for (double v : w.thresholds) q.add_thresholds(v);
  for (double v : w.range_min) q.add_range_min(v);
  for (double v : w.range_max) q.add_range_max(v);
  for (double v : w.scales) q.add_scales(v);
  for (int64_t v : w.zero_points) q.add_zero_points(v);
  if (w.int_values.dtype() == DType::kInt32) {
    *q.mutable_int_values() = IntTensor(w.int_values, w.storage, w.tensor);
  }
  for (float v : w.lut_values) q.add_lut_values(v);
  return q;
}

v1::QuantizedGraph BuildQuantizedGraph(const JobState& state,
                                       const QuantizedGraphExtras& extras) {
  const Graph& g = state.model.graph;
  v1::QuantizedGraph qg;
  qg.set_model_name(g.name);
  qg.set_tpc(extras.tpc);
  qg.set_tpc_digest(extras.tpc_digest);
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
    for (const WeightParams& w : p.weight_results) {
      *q->add_weights() = ToProto(w);
      if (w.attr == tpc::kKernelAttr) q->set_weights_bits(w.n_bits);
    }
    if (q->weights_bits() == 0 && p.weight_results.size() == 1 &&
        p.weight_results[0].attr == "pos_attr") {
      q->set_weights_bits(p.weight_results[0].n_bits);
    }
    if (p.quantize_activation) {
      *q->add_activations() = ToProto(p.activation);
      for (const auto& a : p.extra_activations) {
        *q->add_activations() = ToProto(a);
      }
      q->set_activation_bits(p.activation.n_bits);
    }
    q->set_float_reason(p.float_reason);
    if (extras.candidate_sensitivity != nullptr) {
      auto it = extras.candidate_sensitivity->find(n.name);
      if (it != extras.candidate_sensitivity->end()) {
        for (double s : it->second) q->add_candidate_sensitivity(s);
      }
    }
    if (extras.tensor_sqnr_db != nullptr && !n.outputs.empty()) {
      auto it = extras.tensor_sqnr_db->find(n.outputs[0]);
      if (it != extras.tensor_sqnr_db->end()) {
        q->set_sqnr_db(std::isfinite(it->second) ? it->second : 0.0);
      }
    }
  }
  for (const auto& fg : state.fused_groups) *qg.add_fused_groups() = fg;
  for (const auto& in : g.inputs) {
    auto it = state.input_activations.find(in.name);
    if (it != state.input_activations.end()) {
      *qg.add_input_activations() = ToProto(it->second);
    }
  }
  return qg;
}

}  // namespace quantd
