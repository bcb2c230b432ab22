#include "core/pipeline/job/activation_sizes.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/graph/shape_inference.h"
#include "core/pipeline/corrections/shift_negative.h"
#include "core/pipeline/evaluation/paired_models.h"
#include "core/pipeline/mixed_precision/sensitivity.h"
#include "core/tpc/framework_info.h"

namespace quantd {

InputShapes FirstSampleShapes(const std::vector<SampleFeeds>& calibration) {
  InputShapes shapes;
  if (calibration.empty()) return shapes;
  for (const auto& [name, t] : calibration[0]) shapes[name] = t.shape();
  return shapes;
}

bool InferSampleShapes(const std::vector<SampleFeeds>& calibration,
                       Model* model) {
  return InferSampleShapes(FirstSampleShapes(calibration), model);
}

bool InferSampleShapes(const InputShapes& shapes, Model* model) {
  ShapeInferenceOptions shape_options;
  shape_options.input_shapes = shapes;
  if (InferShapes(model, shape_options).ok()) return true;
  shape_options.input_shapes.clear();  // fall back to the declared shapes
  return InferShapes(model, shape_options).ok();
}

namespace {

// A kernel op (FrameworkInfo's) with a constant weight: searched when the
// bits of the kernels are.
bool IsKernel(const Graph& g, const Node& n) {
  return tpc::OnnxFrameworkInfo::Default().IsKernelOp(n.op_type) &&
         n.inputs.size() >= 2 && g.FindInitializer(n.inputs[1]) != nullptr;
}

// Activations preparation fuses into the kernel before them (then the
// kernel's output is no interest point).
bool IsFusedActivation(const std::string& op) {
  static const absl::flat_hash_set<std::string> kOps = {
      "Relu",    "Clip",        "LeakyRelu", "PRelu",   "HardSwish",
      "Sigmoid", "HardSigmoid", "Elu",       "Selu",    "Softplus",
      "Tanh",    "Gelu",        "Swish",     "Softsign"};
  return kOps.contains(op);
}

// Who produces and who reads each tensor, and the tensors preparation folds
// away: a kernel's output read only by a BatchNormalization (folded into
// the kernel), and the inner tensors of x * f(x) where f is a short chain
// (Sigmoid; HardSigmoid; x + 3, Clip): a swish or hard swish, one fused
// activation once prepared.
class GraphLinks {
 public:
  explicit GraphLinks(const Graph& g) : g_(g) {
    const int n = static_cast<int>(g.nodes.size());
    for (int i = 0; i < n; ++i) {
      for (const std::string& out : g.nodes[i].outputs) producer_[out] = i;
      for (const std::string& in : g.nodes[i].inputs) {
        consumers_[in].push_back(i);
      }
    }
    for (const Node& node : g.nodes) {
      if (node.outputs.empty()) continue;
      if (IsKernel(g, node) && QuantizedOutput(node) != node.outputs[0]) {
        folded_.insert(node.outputs[0]);
      }
      AddSwish(node.outputs[0]);
    }
    for (const Node& node : g.nodes) {
      if (node.outputs.empty() || !IsKernel(g, node)) continue;
      const std::string& out = QuantizedOutput(node);
      const Node* next = SoleConsumer(out);
      if (next == nullptr ? swish_inputs_.contains(out)
                          : IsFusedActivation(next->op_type)) {
        fused_.insert(out);
      }
    }
  }

  // What a kernel's activation quantizer sees once prepared: its output, or
  // that of the BatchNormalization (folded into it) that alone reads it.
  const std::string& QuantizedOutput(const Node& kernel) const {
    const Node* next = SoleConsumer(kernel.outputs[0]);
    return next != nullptr && next->op_type == "BatchNormalization" &&
                   !next->outputs.empty()
               ? next->outputs[0]
               : kernel.outputs[0];
  }

  // An initializer or a Constant node's output.
  bool IsConstantInput(const std::string& t) const {
    if (g_.IsConstant(t)) return true;
    auto it = producer_.find(t);
    return it != producer_.end() && g_.nodes[it->second].op_type == "Constant";
  }
  const absl::flat_hash_map<std::string, int>& producer() const {
    return producer_;
  }
  bool Folded(const std::string& t) const { return folded_.contains(t); }
  // A kernel's output (or its folded BatchNormalization's) that an
  // activation or a swish after it fuses with: not quantized, no interest
  // point.
  bool FusedWithActivation(const std::string& t) const {
    return fused_.contains(t);
  }
  // The output of x * f(x) (SwishChain).
  bool IsSwish(const std::string& t) const { return swishes_.contains(t); }
  const Node* SoleConsumer(const std::string& t) const {
    auto it = consumers_.find(t);
    if (it == consumers_.end() || it->second.size() != 1) return nullptr;
    return &g_.nodes[it->second[0]];
  }

 private:
  // f's nodes when `x` is read only by x * f(x); empty otherwise.
  std::vector<const Node*> SwishChain(const std::string& x) const {
    auto it = consumers_.find(x);
    if (it == consumers_.end() || it->second.size() != 2) return {};
    for (int k = 0; k < 2; ++k) {
      const Node& mul = g_.nodes[it->second[k]];
      if (mul.op_type != "Mul") continue;
      std::vector<const Node*> chain = {&g_.nodes[it->second[1 - k]]};
      while (chain.size() <= 3 && !chain.back()->outputs.empty()) {
        const Node* next = SoleConsumer(chain.back()->outputs[0]);
        if (next == &mul) return chain;
        if (next == nullptr) break;
        chain.push_back(next);
      }
    }
    return {};
  }

  // When `x` is read only by x * f(x): f's tensors and the product are
  // inner tensors of one fused activation, whose output is the product, or
  // Paddle's hard swish's scaled product (x * relu6(x + 3) / 6).
  void AddSwish(const std::string& x) {
    const std::vector<const Node*> chain = SwishChain(x);
    if (chain.empty()) return;
    swish_inputs_.insert(x);
    for (const Node* inner : chain) {
      folded_.insert(inner->outputs.begin(), inner->outputs.end());
    }
    // SwishChain ends where the product reads the chain's last tensor.
    const Node& mul = *SoleConsumer(chain.back()->outputs[0]);
    if (mul.outputs.empty()) return;
    const std::string& product = mul.outputs[0];
    const Node* scale = SoleConsumer(product);
    if (scale != nullptr &&
        (scale->op_type == "Div" || scale->op_type == "Mul") &&
        scale->inputs.size() == 2 && scale->inputs[0] == product &&
        IsConstantInput(scale->inputs[1]) && !scale->outputs.empty()) {
      folded_.insert(product);
      swishes_.insert(scale->outputs[0]);
    } else {
      swishes_.insert(product);
    }
  }

  const Graph& g_;
  absl::flat_hash_map<std::string, int> producer_;
  absl::flat_hash_map<std::string, std::vector<int>> consumers_;
  absl::flat_hash_set<std::string> folded_, fused_, swishes_, swish_inputs_;
};

// The bytes the sensitivity's float cache keeps, and the most bytes one
// cone's nodes make, with cones cut at `depth` interest points
// (ActivationSizes, SensitivityOptions::depth).
struct SensitivityBytes {
  int64_t kept = 0, largest_cone = 0;
};

SensitivityBytes SensitivityCacheBytes(
    const Graph& g, const GraphLinks& links,
    const std::map<std::string, int64_t>& bytes, int depth) {
  const int n = static_cast<int>(g.nodes.size());
  const auto& producer = links.producer();
  constexpr int64_t kCap = int64_t{1} << 50;
  auto bytes_of = [&](const std::string& t) -> int64_t {
    auto it = bytes.find(t);  // constants and unknown names count 0
    return it == bytes.end() ? 0 : it->second;
  };
  // The compared tensors: interest points and graph outputs.
  absl::flat_hash_set<std::string> points, compared;
  for (const Node& node : g.nodes) {
    if (node.outputs.empty()) continue;
    if (!IsMpInterestOp(node.op_type)) continue;
    if (!IsKernel(g, node)) {
      if (!links.Folded(node.outputs[0])) points.insert(node.outputs[0]);
    } else if (!links.FusedWithActivation(links.QuantizedOutput(node))) {
      points.insert(links.QuantizedOutput(node));
    }
  }
  compared = points;
  for (const ValueInfo& v : g.outputs) compared.insert(v.name);
  // Every kernel's cone: the nodes after it that depend on it. Integers
  // only inside the loops: tensors by id, each input with its producer.
  absl::flat_hash_map<std::string, int> id;
  std::vector<std::string> names;
  struct Input {
    int tensor, producer;  // producer -1: a graph input or a constant
  };
  std::vector<std::vector<Input>> inputs(n);
  std::vector<std::vector<int>> outputs(n);
  auto id_of = [&](const std::string& t) {
    auto [it, added] = id.try_emplace(t, static_cast<int>(names.size()));
    if (added) names.push_back(t);
    return it->second;
  };
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      auto it = producer.find(in);
      inputs[i].push_back({id_of(in), it == producer.end() ? -1 : it->second});
    }
    for (const std::string& out : g.nodes[i].outputs) {
      if (compared.contains(out)) outputs[i].push_back(id_of(out));
    }
  }
  // Per node: the fewest interest points met on a path from the start to
  // its output, itself included (BuildDownstreamCone's cut); kOut: not in
  // the cone. A node's output at `depth` feeds nothing further.
  constexpr int kOut = std::numeric_limits<int>::max();
  std::vector<int> met(n);
  std::vector<char> kept(names.size()), is_point(n);
  std::vector<int64_t> made(n);  // the bytes of a node's outputs
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (points.contains(out)) is_point[i] = 1;
      made[i] = std::min(kCap, made[i] + bytes_of(out));
    }
  }
  SensitivityBytes out;
  for (int start = 0; start < n; ++start) {
    if (!IsKernel(g, g.nodes[start])) continue;
    std::fill(met.begin(), met.end(), kOut);
    met[start] = is_point[start];
    int64_t cone_bytes = 0;
    for (int i = start; i < n; ++i) {
      if (i > start) {
        int before = kOut;
        for (const Input& in : inputs[i]) {
          if (in.producer < 0 || met[in.producer] == kOut) continue;
          if (depth > 0 && met[in.producer] >= depth) continue;
          before = std::min(before, met[in.producer]);
        }
        if (before == kOut) continue;
        met[i] = before + is_point[i];
      }
      for (const Input& in : inputs[i]) {
        if (in.producer < 0 || met[in.producer] == kOut) kept[in.tensor] = 1;
      }
      for (int o : outputs[i]) kept[o] = 1;
      cone_bytes = std::min(kCap, cone_bytes + made[i]);
    }
    out.largest_cone = std::max(out.largest_cone, cone_bytes);
  }
  for (size_t t = 0; t < names.size(); ++t) {
    if (kept[t]) out.kept = std::min(kCap, out.kept + bytes_of(names[t]));
  }
  return out;
}

// What shift-negative correction adds to the sensitivity's cache where it
// may apply (shift_negative.h: the statistics decide): an activation it
// considers, read only (through its bypass ops) by a Conv or Gemm of a
// constant weight, gets an Add (its shifted copy) and, before a padded
// Conv, a Pad (its padded copy, counted at the activation's size):
// ShiftNegativeInsertedTensors.
// With `constant_adds`, the Adds of a constant instead
// (shift_negative_constant_add), which get only the Pad.
int64_t ShiftNegativeBytes(const Graph& g, const GraphLinks& links,
                           const std::map<std::string, int64_t>& bytes,
                           bool constant_adds) {
  constexpr int64_t kCap = int64_t{1} << 50;
  int64_t total = 0;
  for (const Node& node : g.nodes) {
    if (node.outputs.empty()) continue;
    const std::string& out = node.outputs[0];
    if (constant_adds
            ? ConstantAddOperand(g, node) < 0
            : !IsShiftNegativeOp(node.op_type) && !links.IsSwish(out)) {
      continue;
    }
    auto size = bytes.find(out);
    if (size == bytes.end()) continue;
    const Node* next = links.SoleConsumer(out);
    while (next != nullptr && IsShiftNegativeBypass(next->op_type) &&
           !next->outputs.empty()) {
      next = links.SoleConsumer(next->outputs[0]);
    }
    if (next == nullptr || !IsKernel(g, *next)) continue;
    const int64_t copies = std::max(
        0, ShiftNegativeInsertedTensors(*next) - (constant_adds ? 1 : 0));
    total = std::min(kCap, total + copies * size->second);
  }
  return total;
}

// The tensors calibration histograms (StatisticsRequestFor): the float
// graph inputs and the float outputs of the prepared graph's nodes, less a
// kernel's output an activation fuses with. The outputs of
// quantization-preserving ops (the TPC's) count too: an upper bound.
int64_t HistogrammedTensors(const Graph& g, const GraphLinks& links) {
  auto is_float = [&](const std::string& t) {
    auto it = g.value_info.find(t);
    return it != g.value_info.end() && it->second.dtype == DType::kFloat;
  };
  int64_t count = 0;
  for (const ValueInfo& v : g.inputs) {
    if (v.dtype == DType::kFloat && !g.IsConstant(v.name)) ++count;
  }
  for (const Node& node : g.nodes) {
    for (const std::string& out : node.outputs) {
      if (out.empty() || links.Folded(out) || links.FusedWithActivation(out) ||
          !is_float(out)) {
        continue;
      }
      ++count;
    }
  }
  return count;
}

}  // namespace

ActivationSizes ActivationBytesPerSample(
    const Model& model, bool shapes_inferred,
    const std::vector<SampleFeeds>& calibration, int sensitivity_depth) {
  return ActivationBytesPerSample(model, shapes_inferred,
                                  FirstSampleShapes(calibration),
                                  sensitivity_depth);
}

ActivationSizes ActivationBytesPerSample(const Model& model,
                                         bool shapes_inferred,
                                         const InputShapes& input_shapes,
                                         int sensitivity_depth) {
  if (!shapes_inferred) return {};
  constexpr int64_t kCap = int64_t{1} << 50;
  // The sample's largest input (a stand-in for tensors of unknown shape):
  // its element size is the graph input's (float for a name it lacks).
  int64_t largest_input = 0;
  for (const auto& [name, shape] : input_shapes) {
    int64_t n = 4;
    for (const ValueInfo& in : model.graph.inputs) {
      const int64_t size = static_cast<int64_t>(DTypeSize(in.dtype));
      if (in.name == name && size > 0) n = size;
    }
    for (int64_t d : shape) n = (d > 0 && n > kCap / d) ? kCap : n * d;
    largest_input = std::max(largest_input, std::min(kCap, n));
  }
  const Graph& g = model.graph;
  auto bytes_of = [&](const ValueInfo& info) {
    int64_t n = 1;
    for (int64_t d : info.shape) {
      if (d < 0) return largest_input;
      n = (d > 0 && n > kCap / d) ? kCap : n * d;
    }
    if (!info.has_shape) return largest_input;
    const int64_t size = static_cast<int64_t>(DTypeSize(info.dtype));
    return std::min(kCap, n) * (size > 0 ? size : 4);
  };
  ActivationSizes sizes;
  std::map<std::string, int64_t> bytes;
  for (const auto& [name, info] : g.value_info) {
    if (g.IsConstant(name)) continue;
    bytes[name] = bytes_of(info);
    sizes.total = std::min(kCap, sizes.total + bytes[name]);
  }
  // The live set, node by node.
  const int64_t end = static_cast<int64_t>(g.nodes.size());
  std::map<std::string, int64_t> last_read;
  for (int64_t i = 0; i < end; ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      if (bytes.count(in)) last_read[in] = i;
    }
  }
  for (const ValueInfo& v : g.outputs) last_read[v.name] = end;
  int64_t live = 0;
  for (const ValueInfo& v : g.inputs) {
    auto it = bytes.find(v.name);
    if (it != bytes.end()) live = std::min(kCap, live + it->second);
  }
  sizes.live = live;
  for (int64_t i = 0; i < end; ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      auto it = bytes.find(out);
      if (it != bytes.end()) live = std::min(kCap, live + it->second);
    }
    sizes.live = std::max(sizes.live, live);
    for (const std::string& name : g.nodes[i].inputs) {
      auto it = last_read.find(name);
      if (it == last_read.end() || it->second != i) continue;
      live -= bytes[name];
      last_read.erase(it);  // a node reading a tensor twice releases it once
    }
    for (const std::string& out : g.nodes[i].outputs) {
      if (bytes.count(out) && !last_read.count(out)) live -= bytes[out];
    }
  }
  const GraphLinks links(g);
  const SensitivityBytes cache =
      SensitivityCacheBytes(g, links, bytes, sensitivity_depth);
  sizes.sensitivity_kept = cache.kept;
  sizes.sensitivity_cone = cache.largest_cone;
  for (const Node& node : g.nodes) {
    for (const std::string& out : node.outputs) {
      auto it = bytes.find(out);
      if (it == bytes.end() || links.Folded(out)) continue;
      sizes.prepared = std::min(kCap, sizes.prepared + it->second);
    }
  }
  sizes.histogrammed = HistogrammedTensors(g, links);
  sizes.shift_negative = ShiftNegativeBytes(g, links, bytes, false);
  sizes.shift_negative_constant_add = ShiftNegativeBytes(g, links, bytes, true);
  // The report runs the two models apart: the float run's values are all
  // held until the fake-quant run reaches them.
  if (!PairedModels::CanPair(g)) sizes.live = sizes.total;
  return sizes;
}

}  // namespace quantd
