#include "core/qdq/qdq_export.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/qdq/internal/export_util.h"
#include "core/qdq/qdq_math.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

constexpr int64_t kOnnxInt64 = 7;  // TensorProto.INT64 for Cast's `to`

using qdq_internal::IntAttr;
using qdq_internal::NameTable;

Tensor ScalarOrVector(const std::vector<float>& v, bool scalar) {
  if (scalar) return Tensor::FromVector<float>({v[0]}, {});
  return Tensor::FromVector<float>(v, {static_cast<int64_t>(v.size())});
}

// Integers (any width, in an int32/int64 tensor or already typed) -> a tensor
// of the storage dtype; 4-bit storage is held one value per int8/uint8.
// Calls f(T{}) with T the C++ type of an integer dtype; false for others.
template <typename F>
bool ForIntType(DType d, F&& f) {
  switch (d) {
    case DType::kInt32:
      f(int32_t{});
      return true;
    case DType::kInt64:
      f(int64_t{});
      return true;
    case DType::kInt8:
      f(int8_t{});
      return true;
    case DType::kUint8:
      f(uint8_t{});
      return true;
    case DType::kInt16:
      f(int16_t{});
      return true;
    case DType::kUint16:
      f(uint16_t{});
      return true;
    default:
      return false;
  }
}

absl::StatusOr<Tensor> ToStorage(const Tensor& ints, DType storage,
                                 const std::string& what) {
  DType holder = storage;
  if (storage == DType::kInt4) holder = DType::kInt8;
  if (storage == DType::kUint4) holder = DType::kUint8;
  Tensor out(holder, ints.shape());
  const int64_t lo = DTypeMin(storage), hi = DTypeMax(storage);
  const int64_t n = ints.num_elements();
  absl::Status status;
  const bool known_input = ForIntType(ints.dtype(), [&](auto in_type) {
    using In = decltype(in_type);
    if (n == 0) return;
    const In* in = ints.data<In>();
    const bool known_holder =
        holder != DType::kInt64 && ForIntType(holder, [&](auto out_type) {
          using Out = decltype(out_type);
          Out* o = out.mutable_data<Out>();
          for (int64_t i = 0; i < n; ++i) {
            const int64_t v = static_cast<int64_t>(in[i]);
            if (v < lo || v > hi) {
              status = absl::InvalidArgumentError(absl::StrCat(
                  what, ": value ", v, " at element ", i, " does not fit ",
                  DTypeName(storage), " [", lo, ", ", hi, "]"));
              return;
            }
            o[i] = static_cast<Out>(v);
          }
        });
    if (!known_holder) {
      status = absl::InvalidArgumentError(
          absl::StrCat(what, ": unsupported storage ", DTypeName(storage)));
    }
  });
  if (!known_input) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": integer values have dtype ",
                     DTypeName(ints.dtype()), ", expected an integer type"));
  }
  RETURN_IF_ERROR(status);
  return out;
}

Tensor ZeroPoints(const QdqWeight& w, DType holder, size_t n, bool scalar) {
  std::vector<int64_t> zps = w.zero_points;
  zps.resize(n, 0);
  std::vector<int64_t> shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(n));
  Tensor t(holder, shape);
  for (size_t i = 0; i < n; ++i) {
    if (holder == DType::kInt8) t.mutable_data<int8_t>()[i] = zps[i];
    if (holder == DType::kUint8) t.mutable_data<uint8_t>()[i] = zps[i];
    if (holder == DType::kInt16) t.mutable_data<int16_t>()[i] = zps[i];
    if (holder == DType::kUint16) t.mutable_data<uint16_t>()[i] = zps[i];
  }
  return t;
}

DType HolderOf(DType storage) {
  if (storage == DType::kInt4) return DType::kInt8;
  if (storage == DType::kUint4) return DType::kUint8;
  return storage;
}

struct Builder {
  Model* model;
  NameTable names;
  std::vector<Node> out_nodes;

  Node MakeNode(const std::string& op, const std::string& base_name,
                std::vector<std::string> inputs,
                std::vector<std::string> outputs) {
    Node n;
    n.op_type = op;
    n.name = names.Unique(base_name);
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    return n;
  }

  std::string AddInitializer(const std::string& base, Tensor t,
                             DType sub_byte = DType::kUndefined) {
    std::string name = names.Unique(base);
    model->graph.initializers[name] = std::move(t);
    if (sub_byte != DType::kUndefined) {
      model->graph.sub_byte_types[name] = sub_byte;
    }
    return name;
  }
};

absl::Status CheckActivation(const QdqActivation& a) {
  if (!(a.scale > 0) || !std::isfinite(a.scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation '", a.tensor, "': scale ", a.scale, " is not positive"));
  }
  if (a.zero_point < a.storage.qmin || a.zero_point > a.storage.qmax) {
    return absl::InvalidArgumentError(
        absl::StrCat("activation '", a.tensor, "': zero point ", a.zero_point,
                     " outside [", a.storage.qmin, ", ", a.storage.qmax, "]"));
  }
  if (a.storage.dtype == DType::kInt32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation '", a.tensor, "': int32 storage is for biases only"));
  }
  return absl::OkStatus();
}

// Validates the plan's activations against the graph (names, params) and
// indexes them by tensor.
absl::Status IndexActivations(
    const QdqPlan& plan, const std::map<std::string, int>& producer,
    const std::set<std::string>& graph_inputs,
    const std::set<std::string>& graph_outputs,
    std::map<std::string, const QdqActivation*>* act_by_tensor_out) {
  std::map<std::string, const QdqActivation*>& act_by_tensor =
      *act_by_tensor_out;
  for (const auto& a : plan.activations) {
    RETURN_IF_ERROR(CheckActivation(a));
    if (producer.count(a.tensor) == 0 && graph_inputs.count(a.tensor) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("activation '", a.tensor,
                       "' is neither a graph input nor a node output"));
    }
    if (graph_inputs.count(a.tensor) && graph_outputs.count(a.tensor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "activation '", a.tensor,
          "' is both a graph input and a graph output; leave it float"));
    }
    if (!act_by_tensor.emplace(a.tensor, &a).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("activation '", a.tensor, "' quantized twice"));
    }
  }
  return absl::OkStatus();
}

// Validates the plan's weights (node, constant input, shape, scales) and
// indexes them by node.
absl::Status IndexWeights(
    const QdqPlan& plan, const Graph& g,
    const std::map<std::string, int>& node_by_name,
    std::map<int, std::vector<const QdqWeight*>>* weights_by_node_out) {
  std::map<int, std::vector<const QdqWeight*>>& weights_by_node =
      *weights_by_node_out;
  for (const auto& w : plan.weights) {
    auto it = node_by_name.find(w.node);
    if (it == node_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight of unknown node '", w.node, "'"));
    }
    const Node& n = g.nodes[it->second];
    const std::string& init = n.Input(w.input_index);
    const Tensor* t = g.FindInitializer(init);
    if (t == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(n.Label(), ": input ", w.input_index,
                       " is not a constant initializer"));
    }
    if (w.int_values.shape() != t->shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          n.Label(), ": quantized input ", w.input_index, " has shape ",
          w.int_values.DebugString(), ", float weight is ", t->DebugString()));
    }
    const int64_t channels =
        w.axis >= 0 && w.axis < t->rank() ? t->dim(w.axis) : 1;
    if (w.axis >= t->rank() ||
        static_cast<int64_t>(w.scales.size()) != channels) {
      return absl::InvalidArgumentError(absl::StrCat(
          n.Label(), ": input ", w.input_index, " has ", w.scales.size(),
          " scales for axis ", w.axis, " of ", t->DebugString()));
    }
    for (float s : w.scales) {
      if (!(s > 0) || !std::isfinite(s)) {
        return absl::InvalidArgumentError(
            absl::StrCat(n.Label(), ": input ", w.input_index, " has scale ", s,
                         " (must be positive and finite)"));
      }
    }
    weights_by_node[it->second].push_back(&w);
  }
  return absl::OkStatus();
}

// Drops float initializers nothing reads any more.
void DropUnreadInitializers(Graph* graph) {
  Graph& g = *graph;
  std::set<std::string> read;
  std::function<void(const Graph&)> collect = [&](const Graph& sg) {
    for (const Node& n : sg.nodes) {
      for (const auto& in : n.inputs) read.insert(in);
      for (const auto& [key, a] : n.attributes) {
        if (a.g) collect(*a.g);
      }
    }
    for (const auto& out : sg.outputs) read.insert(out.name);
  };
  collect(g);
  for (auto it = g.initializers.begin(); it != g.initializers.end();) {
    if (read.count(it->first) == 0) {
      g.sub_byte_types.erase(it->first);
      g.value_info.erase(it->first);
      it = g.initializers.erase(it);
    } else {
      ++it;
    }
  }
}

// One export's rewrite of the graph: the plan indexed by tensor and node,
// and the per-consumer DQ outputs filled as the Q nodes are emitted.
struct QdqRewrite {
  QdqRewrite(Model* model, const Graph& float_graph)
      : b{model, NameTable(float_graph), {}}, g(model->graph) {}

  Builder b;
  Graph& g;
  std::set<std::string> graph_outputs;
  std::map<std::string, const QdqActivation*> act_by_tensor;
  std::map<int, std::vector<const QdqWeight*>> weights_by_node;
  // Consumers of each quantized activation, by node index.
  std::map<std::string, std::vector<int>> consumers;
  // Outer-scope names each node's subgraphs (If/Loop bodies) read.
  std::vector<absl::flat_hash_set<std::string>> outer_reads;
  // Per-consumer DQ output names, filled when the Q is emitted.
  std::map<std::pair<std::string, int>, std::string> dq_for_consumer;

  void FindConsumers();
  absl::Status EmitQdq(const QdqActivation& a, const std::string& float_name);
  absl::Status EmitWeight(Node& n, const QdqWeight& w);
  absl::Status RewriteNodes();
};

void QdqRewrite::FindConsumers() {
  outer_reads.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& [key, a] : g.nodes[i].attributes) {
      if (a.g) CollectOuterReads(*a.g, &outer_reads[i]);
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<std::string> seen;
    for (const auto& in : g.nodes[i].inputs) {
      if (act_by_tensor.count(in) && seen.insert(in).second) {
        consumers[in].push_back(static_cast<int>(i));
      }
    }
    for (const auto& in : outer_reads[i]) {
      if (act_by_tensor.count(in) && seen.insert(in).second) {
        consumers[in].push_back(static_cast<int>(i));
      }
    }
  }
}

// The zero point of `a` in its holder type: a scalar (channels == 0) or
// repeated `channels` times.
absl::StatusOr<Tensor> ZeroPointTensor(const QdqActivation& a, DType holder,
                                       int64_t channels) {
  std::vector<int64_t> shape;
  if (channels > 0) shape = {channels};
  Tensor t(holder, shape);
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (holder) {
      case DType::kInt8:
        t.mutable_data<int8_t>()[i] = a.zero_point;
        break;
      case DType::kUint8:
        t.mutable_data<uint8_t>()[i] = a.zero_point;
        break;
      case DType::kInt16:
        t.mutable_data<int16_t>()[i] = a.zero_point;
        break;
      case DType::kUint16:
        t.mutable_data<uint16_t>()[i] = a.zero_point;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("activation '", a.tensor, "': storage ",
                         DTypeName(a.storage.dtype), " not supported"));
    }
  }
  return t;
}

absl::Status QdqRewrite::EmitQdq(const QdqActivation& a,
                                 const std::string& float_name) {
  const DType holder = HolderOf(a.storage.dtype);
  const DType sub =
      holder != a.storage.dtype ? a.storage.dtype : DType::kUndefined;
  std::string scale =
      b.AddInitializer(absl::StrCat(a.tensor, "_scale"),
                       Tensor::FromVector<float>({a.scale}, {}));
  ASSIGN_OR_RETURN(Tensor zp_t, ZeroPointTensor(a, holder, 0));
  std::string zp =
      b.AddInitializer(absl::StrCat(a.tensor, "_zero_point"), zp_t, sub);
  std::string q_input = float_name;
  if (NeedsClip(a.storage)) {
    // QuantizeLinear saturates to the dtype; narrower grids clip first.
    std::string lo = b.AddInitializer(
        absl::StrCat(a.tensor, "_clip_min"),
        Tensor::FromVector<float>(
            {DequantizeValue(a.storage.qmin, a.scale, a.zero_point)}, {}));
    std::string hi = b.AddInitializer(
        absl::StrCat(a.tensor, "_clip_max"),
        Tensor::FromVector<float>(
            {DequantizeValue(a.storage.qmax, a.scale, a.zero_point)}, {}));
    std::string clipped = b.names.Unique(absl::StrCat(a.tensor, "_clipped"));
    b.out_nodes.push_back(b.MakeNode("Clip", absl::StrCat(a.tensor, "_Clip"),
                                     {q_input, lo, hi}, {clipped}));
    q_input = clipped;
  }
  std::string q_out = b.names.Unique(absl::StrCat(a.tensor, "_quantized"));
  b.out_nodes.push_back(b.MakeNode("QuantizeLinear",
                                   absl::StrCat(a.tensor, "_QuantizeLinear"),
                                   {q_input, scale, zp}, {q_out}));
  int k = 0;
  for (int consumer : consumers[a.tensor]) {
    const std::string& consumer_name = g.nodes[consumer].name;
    std::string dq_out =
        b.names.Unique(absl::StrCat(a.tensor, "_dequantized_", k++));
    std::vector<std::string> dq_inputs = {q_out, scale, zp};
    auto per_channel = a.per_channel_consumers.find(consumer_name);
    if (per_channel != a.per_channel_consumers.end()) {
      const auto [axis, channels] = per_channel->second;
      ASSIGN_OR_RETURN(Tensor zp_c, ZeroPointTensor(a, holder, channels));
      dq_inputs = {q_out,
                   b.AddInitializer(
                       absl::StrCat(a.tensor, "_scale_", consumer_name),
                       Tensor::FromVector<float>(
                           std::vector<float>(channels, a.scale), {channels})),
                   b.AddInitializer(
                       absl::StrCat(a.tensor, "_zero_point_", consumer_name),
                       zp_c, sub)};
    }
    Node dq =
        b.MakeNode("DequantizeLinear",
                   absl::StrCat(a.tensor, "_DequantizeLinear_", consumer_name),
                   dq_inputs, {dq_out});
    if (per_channel != a.per_channel_consumers.end()) {
      dq.attributes["axis"] = IntAttr(per_channel->second.first);
    }
    b.out_nodes.push_back(std::move(dq));
    dq_for_consumer[{a.tensor, consumer}] = dq_out;
  }
  if (graph_outputs.count(a.tensor)) {
    b.out_nodes.push_back(b.MakeNode(
        "DequantizeLinear", absl::StrCat(a.tensor, "_DequantizeLinear_output"),
        {q_out, scale, zp}, {a.tensor}));
  }
  return absl::OkStatus();
}

absl::Status QdqRewrite::EmitWeight(Node& n, const QdqWeight& w) {
  const std::string init = n.Input(w.input_index);
  const std::string what =
      absl::StrCat(n.Label(), " input ", w.input_index, " ('", init, "')");
  const bool scalar = w.axis < 0;
  std::string deq = b.names.Unique(absl::StrCat(init, "_dequantized"));
  if (!w.codebook.empty()) {
    // LUT: uint8 indices -> Cast(int64) -> Gather(codebook) -> Mul(scale).
    if (w.codebook.size() > 256) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": codebook of ", w.codebook.size(),
                       " entries does not fit uint8 indices"));
    }
    ASSIGN_OR_RETURN(Tensor idx, ToStorage(w.int_values, DType::kUint8, what));
    for (int64_t i = 0; i < idx.num_elements(); ++i) {
      if (idx.data<uint8_t>()[i] >= w.codebook.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": LUT index ", int{idx.data<uint8_t>()[i]},
                         " out of a codebook of ", w.codebook.size()));
      }
    }
    std::string idx_name =
        b.AddInitializer(absl::StrCat(init, "_lut_indices"), idx);
    std::string book = b.AddInitializer(
        absl::StrCat(init, "_codebook"),
        Tensor::FromVector<float>(w.codebook,
                                  {static_cast<int64_t>(w.codebook.size())}));
    std::vector<int64_t> scale_shape(w.int_values.rank(), 1);
    if (!scalar) scale_shape[w.axis] = static_cast<int64_t>(w.scales.size());
    std::string scale = b.AddInitializer(
        absl::StrCat(init, "_scale"),
        Tensor::FromVector<float>(
            w.scales, scalar ? std::vector<int64_t>{} : scale_shape));
    std::string idx64 = b.names.Unique(absl::StrCat(init, "_lut_indices64"));
    Node cast =
        b.MakeNode("Cast", absl::StrCat(init, "_Cast"), {idx_name}, {idx64});
    cast.attributes["to"] = IntAttr(kOnnxInt64);
    b.out_nodes.push_back(std::move(cast));
    std::string gathered = b.names.Unique(absl::StrCat(init, "_lut_values"));
    Node gather = b.MakeNode("Gather", absl::StrCat(init, "_Gather"),
                             {book, idx64}, {gathered});
    gather.attributes["axis"] = IntAttr(0);
    b.out_nodes.push_back(std::move(gather));
    b.out_nodes.push_back(b.MakeNode("Mul", absl::StrCat(init, "_LutScale"),
                                     {gathered, scale}, {deq}));
  } else {
    ASSIGN_OR_RETURN(Tensor q, ToStorage(w.int_values, w.storage.dtype, what));
    const DType holder = HolderOf(w.storage.dtype);
    const DType sub =
        holder != w.storage.dtype ? w.storage.dtype : DType::kUndefined;
    std::string q_name =
        b.AddInitializer(absl::StrCat(init, "_quantized"), q, sub);
    std::string scale = b.AddInitializer(absl::StrCat(init, "_scale"),
                                         ScalarOrVector(w.scales, scalar));
    std::vector<std::string> inputs = {q_name, scale};
    if (w.storage.dtype != DType::kInt32) {
      inputs.push_back(b.AddInitializer(
          absl::StrCat(init, "_zero_point"),
          ZeroPoints(w, holder, w.scales.size(), scalar), sub));
    }
    Node dq =
        b.MakeNode("DequantizeLinear", absl::StrCat(init, "_DequantizeLinear"),
                   inputs, {deq});
    if (!scalar) dq.attributes["axis"] = IntAttr(w.axis);
    b.out_nodes.push_back(std::move(dq));
  }
  n.inputs[w.input_index] = deq;
  return absl::OkStatus();
}

absl::Status QdqRewrite::RewriteNodes() {
  // Graph inputs first.
  for (const auto& in : g.inputs) {
    auto it = act_by_tensor.find(in.name);
    if (it != act_by_tensor.end()) {
      RETURN_IF_ERROR(EmitQdq(*it->second, in.name));
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = g.nodes[i];
    auto wit = weights_by_node.find(static_cast<int>(i));
    if (wit != weights_by_node.end()) {
      for (const QdqWeight* w : wit->second) {
        RETURN_IF_ERROR(EmitWeight(n, *w));
      }
    }
    for (auto& in : n.inputs) {
      auto d = dq_for_consumer.find({in, static_cast<int>(i)});
      if (d != dq_for_consumer.end()) in = d->second;
    }
    // Subgraphs read the dequantized value too (as in fake-quant runs).
    for (auto& [key, attr] : n.attributes) {
      if (!attr.g) continue;
      auto copy = std::make_shared<Graph>(*attr.g);
      for (const auto& name : outer_reads[i]) {
        auto d = dq_for_consumer.find({name, static_cast<int>(i)});
        if (d != dq_for_consumer.end()) {
          RenameTensorUses(copy.get(), name, d->second);
        }
      }
      attr.g = std::move(copy);
    }
    // A quantized graph output keeps its name on the final DQ; the node's
    // own float output is renamed.
    std::vector<std::pair<std::string, std::string>> float_names;
    for (auto& out : n.outputs) {
      auto it = act_by_tensor.find(out);
      if (it == act_by_tensor.end()) continue;
      std::string float_name = out;
      if (graph_outputs.count(out)) {
        float_name = b.names.Unique(absl::StrCat(out, "_float"));
        out = float_name;
      }
      float_names.emplace_back(it->first, float_name);
    }
    b.out_nodes.push_back(std::move(n));
    for (const auto& [tensor, float_name] : float_names) {
      RETURN_IF_ERROR(EmitQdq(*act_by_tensor[tensor], float_name));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t RequiredQdqOpset(const QdqPlan& plan) {
  int64_t opset = 13;
  for (const auto& a : plan.activations) {
    opset = std::max(opset, MinOpsetFor(a.storage.dtype));
  }
  for (const auto& w : plan.weights) {
    // LUT indices are stored as uint8 (Cast from uint8 exists at 13).
    if (w.codebook.empty()) {
      opset = std::max(opset, MinOpsetFor(w.storage.dtype));
    }
  }
  return opset;
}

absl::StatusOr<Model> BuildQdqModel(const Model& float_model,
                                    const QdqPlan& plan) {
  const int64_t need = RequiredQdqOpset(plan);
  if (float_model.DefaultOpset() < need) {
    return absl::FailedPreconditionError(absl::StrCat(
        "QDQ export needs default-domain opset >= ", need, ", model has ",
        float_model.DefaultOpset(), " (upgrade the model first)"));
  }
  Model model = float_model;
  // IR 7 carries opset 13; int4/int16 Q/DQ (opset 21) need IR 10.
  model.ir_version = std::max<int64_t>(model.ir_version, need >= 21 ? 10 : 7);
  Graph& g = model.graph;
  QdqRewrite r(&model, float_model.graph);

  // Index the graph.
  std::map<std::string, int> node_by_name;
  std::map<std::string, int> producer;  // tensor -> node index
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    node_by_name[g.nodes[i].name] = static_cast<int>(i);
    for (const auto& o : g.nodes[i].outputs) {
      if (!o.empty()) producer[o] = static_cast<int>(i);
    }
  }
  std::set<std::string> graph_inputs;
  std::set<std::string>& graph_outputs = r.graph_outputs;
  for (const auto& in : g.inputs) graph_inputs.insert(in.name);
  for (const auto& out : g.outputs) graph_outputs.insert(out.name);

  // Validate the plan up front (names, params) before touching the model.
  RETURN_IF_ERROR(IndexActivations(plan, producer, graph_inputs, graph_outputs,
                                   &r.act_by_tensor));
  RETURN_IF_ERROR(IndexWeights(plan, g, node_by_name, &r.weights_by_node));

  r.FindConsumers();
  RETURN_IF_ERROR(r.RewriteNodes());
  // Subgraphs that read a quantized graph output by name now see the DQ's
  // value (it keeps the name), as in fake-quant execution.
  g.nodes = std::move(r.b.out_nodes);

  DropUnreadInitializers(&g);
  // Inferred types of renamed/new tensors are left to the consumer's own
  // inference; stale entries for the renamed graph outputs stay valid (same
  // dtype and shape on the DQ).
  std::vector<std::pair<std::string, std::string>> meta = plan.metadata;
  std::sort(meta.begin(), meta.end());
  for (auto& kv : meta) model.metadata_props.push_back(std::move(kv));
  return model;
}

}  // namespace quantd
