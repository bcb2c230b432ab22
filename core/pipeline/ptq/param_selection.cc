#include "core/pipeline/ptq/param_selection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/pipeline/ptq/hessian_scores.h"
#include "core/qdq/qdq_math.h"
#include "core/quantizers/lut_kmeans.h"
#include "core/quantizers/outlier_filter.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/quantizer.h"
#include "core/quantizers/selection.h"
#include "core/quantizers/signedness.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

using quantizers::QuantizationMethod;

QuantizationMethod ToMethod(v1::QuantizationMethod m) {
  return static_cast<QuantizationMethod>(static_cast<int>(m));
}

// The affine form of a threshold grid: scale = T / 2^(n - signed), zp 0.
void SetThresholdGrid(double threshold, bool is_signed, int n_bits,
                      ActivationParams* a) {
  a->threshold = threshold;
  a->scale = quantizers::CalculateDelta(threshold, n_bits, is_signed);
  a->zero_point = 0;
}

// The affine form of a uniform range after MCT's zero-inclusion fix:
// scale = (b - a) / (2^n - 1), zp = -round(a / scale).
void SetRangeGrid(double range_min, double range_max, int n_bits,
                  ActivationParams* a) {
  auto [lo, hi] =
      quantizers::FixRangeToIncludeZero(range_min, range_max, n_bits);
  a->range_min = lo;
  a->range_max = hi;
  double scale = (hi - lo) / ((int64_t{1} << n_bits) - 1);
  if (!(scale > 0)) scale = quantizers::kMinThreshold;
  a->scale = scale;
  a->zero_point = static_cast<int64_t>(std::nearbyint(-lo / scale));
}

// The HMSE weights of `weight` (PtqOptions::hessian_scores). MCT weighs
// only kernels: another attribute falls back to MSE (`method`).
absl::StatusOr<absl::Span<const float>> HmseScoresFor(
    const std::string& tensor_name, const Tensor& weight,
    const WeightSlot& slot, const PtqOptions& options,
    quantizers::ErrorMethod* method) {
  if (slot.attr != kHmseAttr) {
    *method = quantizers::ErrorMethod::kMse;
    return absl::Span<const float>();
  }
  const auto* scores = options.hessian_scores.get();
  auto it = scores == nullptr ? hessian::HessianScores::const_iterator()
                              : scores->find(tensor_name);
  if (scores == nullptr || it == scores->end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("weight '", tensor_name,
                     "': HMSE needs its Hessian scores, none were computed "
                     "(the hessian stage did not run on this kernel)"));
  }
  if (static_cast<int64_t>(it->second.size()) != weight.num_elements()) {
    return absl::InternalError(absl::StrCat(
        "weight '", tensor_name, "': ", it->second.size(),
        " Hessian scores for ", weight.num_elements(), " weights"));
  }
  return absl::Span<const float>(it->second);
}

}  // namespace

absl::StatusOr<ActivationParams> SelectActivationParams(
    const std::string& tensor, const v1::OpQuantizationConfig& config,
    const TensorStats* stats, std::optional<double> known_min,
    std::optional<double> known_max, std::optional<bool> forced_signed,
    const PtqOptions& options) {
  ActivationParams a;
  a.tensor = tensor;
  a.method = config.activation_quantization_method();
  const int n_bits = config.activation_n_bits();
  a.n_bits = n_bits;
  const bool bounded = known_min.has_value() && known_max.has_value();
  const auto what = [&] { return absl::StrCat("activation '", tensor, "'"); };
  if (n_bits < 2 || n_bits > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat(what(), ": ", n_bits, "-bit activations unsupported"));
  }
  quantizers::Histogram hist;
  if (!bounded) {
    if (stats == nullptr || stats->histogram.counts.empty()) {
      return absl::InternalError(
          absl::StrCat(what(), ": no statistics collected"));
    }
    hist = stats->histogram;
    if (std::isfinite(options.z_threshold)) {
      ASSIGN_OR_RETURN(hist,
                       quantizers::ZScoreFilter(options.z_threshold, hist));
    }
  }
  quantizers::Signedness tpc_sign = quantizers::Signedness::kAuto;
  if (forced_signed.has_value()) {
    tpc_sign = *forced_signed ? quantizers::Signedness::kSigned
                              : quantizers::Signedness::kUnsigned;
  }
  const bool is_signed = quantizers::DetermineActivationSignedness(
      tpc_sign, bounded ? known_min : std::nullopt, bounded ? nullptr : &hist);
  a.is_signed = is_signed;
  quantizers::HistogramSearchOptions o;
  o.error_method = options.activation_error_method;
  o.n_bits = n_bits;
  o.p = options.l_p_value;
  o.is_signed = is_signed;
  switch (ToMethod(config.activation_quantization_method())) {
    case QuantizationMethod::kPowerOfTwo: {
      ASSIGN_OR_RETURN(
          auto t, bounded ? quantizers::PowerOfTwoNoClippingSelectionMinMax(
                                *known_min, *known_max, o)
                          : quantizers::PowerOfTwoSelectionHistogram(hist, o));
      SetThresholdGrid(t.threshold, is_signed, n_bits, &a);
      break;
    }
    case QuantizationMethod::kSymmetric: {
      ASSIGN_OR_RETURN(
          auto t, bounded ? quantizers::SymmetricNoClippingSelectionMinMax(
                                *known_min, *known_max, o)
                          : quantizers::SymmetricSelectionHistogram(hist, o));
      SetThresholdGrid(t.threshold, is_signed, n_bits, &a);
      break;
    }
    case QuantizationMethod::kUniform: {
      ASSIGN_OR_RETURN(
          auto r, bounded ? quantizers::UniformNoClippingSelectionMinMax(
                                *known_min, *known_max, o)
                          : quantizers::UniformSelectionHistogram(hist, o));
      a.is_signed = false;  // the uniform grid is [0, 2^n - 1] + zp
      SetRangeGrid(r.range_min, r.range_max, n_bits, &a);
      break;
    }
    case QuantizationMethod::kLutPot: {
      if (bounded) {
        ASSIGN_OR_RETURN(auto t,
                         quantizers::PowerOfTwoNoClippingSelectionMinMax(
                             *known_min, *known_max, o));
        SetThresholdGrid(t.threshold, is_signed, n_bits, &a);
        break;
      }
      ASSIGN_OR_RETURN(auto l, quantizers::LutKmeansHistogram(hist, o));
      // The LUT values lie on the 8-bit grid of T; the affine form below is
      // that grid (export stores 8-bit codes).
      a.is_signed = l.is_signed;
      a.n_bits = 8;
      SetThresholdGrid(l.threshold, l.is_signed, 8, &a);
      for (double v : l.lut_values)
        a.lut_values.push_back(static_cast<float>(v));
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what(), ": activation method ",
                       config.activation_quantization_method(),
                       " is not valid for activations"));
  }
  return a;
}

absl::StatusOr<WeightParams> SelectWeightParams(
    const std::string& tensor_name, const Tensor& weight,
    const WeightSlot& slot, const PtqOptions& options, ThreadPool* pool,
    const CancellationToken* cancel) {
  WeightParams w;
  w.attr = slot.attr;
  w.input_index = slot.input_index;
  w.tensor = tensor_name;
  const v1::AttributeQuantizationConfig& c = slot.config;
  w.method = c.weights_quantization_method();
  const int n_bits = c.weights_n_bits();
  w.n_bits = n_bits;
  const std::string what = absl::StrCat("weight '", tensor_name, "'");
  if (n_bits < 2 || n_bits > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", n_bits, "-bit weights cannot be stored (2..16 bits)"));
  }
  ASSIGN_OR_RETURN(Tensor f, weight.CastToFloat());
  quantizers::TensorView view{f.span<float>(), f.shape()};
  const bool per_channel = c.weights_per_channel_threshold() && f.rank() > 0;
  quantizers::WeightsSearchOptions o;
  o.error_method = options.weights_error_method;
  o.n_bits = n_bits;
  o.per_channel = per_channel;
  o.p = options.l_p_value;
  o.pool = pool;
  o.cancel = cancel;
  if (o.error_method == quantizers::ErrorMethod::kHmse) {
    ASSIGN_OR_RETURN(o.hessian_scores, HmseScoresFor(tensor_name, f, slot,
                                                     options, &o.error_method));
  }
  if (per_channel && slot.channel_axis >= 0 && slot.channel_axis < f.rank()) {
    o.channel_axis = slot.channel_axis;
  } else if (per_channel) {
    o.channel_axis = std::nullopt;  // MCT searches every axis
  } else {
    o.channel_axis = 0;
  }
  quantizers::QuantizedTensor q;
  int axis = 0;
  DType storage = DType::kInt8;
  switch (ToMethod(c.weights_quantization_method())) {
    case QuantizationMethod::kPowerOfTwo:
    case QuantizationMethod::kSymmetric: {
      auto t = ToMethod(c.weights_quantization_method()) ==
                       QuantizationMethod::kPowerOfTwo
                   ? quantizers::PowerOfTwoSelectionTensor(view, o)
                   : quantizers::SymmetricSelectionTensor(view, o);
      if (!t.ok()) {
        return absl::Status(t.status().code(),
                            absl::StrCat(what, ": ", t.status().message()));
      }
      if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
      axis = t->channel_axis;
      w.thresholds = t->threshold;
      ASSIGN_OR_RETURN(q, quantizers::QuantizeSymmetric(view, t->threshold,
                                                        axis, n_bits, true));
      storage = n_bits <= 8 ? DType::kInt8 : DType::kInt16;
      break;
    }
    case QuantizationMethod::kUniform: {
      ASSIGN_OR_RETURN(auto r, quantizers::UniformSelectionTensor(view, o));
      if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
      axis = r.channel_axis;
      w.range_min = r.range_min;
      w.range_max = r.range_max;
      ASSIGN_OR_RETURN(q, quantizers::QuantizeUniform(
                              view, r.range_min, r.range_max, axis, n_bits));
      storage = n_bits <= 8 ? DType::kUint8 : DType::kUint16;
      break;
    }
    case QuantizationMethod::kLutPot:
    case QuantizationMethod::kLutSym: {
      if (n_bits >= 8) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": LUT quantization needs fewer than 8 bits, got ", n_bits));
      }
      const bool sym = ToMethod(c.weights_quantization_method()) ==
                       QuantizationMethod::kLutSym;
      ASSIGN_OR_RETURN(auto l, quantizers::LutKmeansTensor(view, o, sym));
      axis = l.channel_axis;
      w.thresholds = l.scale_per_channel;
      for (double v : l.lut_values)
        w.lut_values.push_back(static_cast<float>(v));
      ASSIGN_OR_RETURN(q, quantizers::QuantizeLut(view, l.lut_values,
                                                  l.scale_per_channel, axis));
      storage = DType::kUint8;  // indices
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": unknown method ", c.weights_quantization_method()));
  }
  w.per_channel = per_channel;
  w.channel_axis = per_channel ? axis : -1;
  w.scales = q.scales;
  w.zero_points.assign(q.zero_points.begin(), q.zero_points.end());
  w.int_values = Tensor::Uninitialized(DType::kInt32, f.shape());
  std::memcpy(w.int_values.mutable_raw(), q.ints.data(),
              q.ints.size() * sizeof(int32_t));
  w.storage = storage;
  return w;
}

absl::StatusOr<Tensor> DequantizedWeight(const WeightParams& w) {
  const std::vector<int64_t>& shape = w.int_values.shape();
  const int64_t n = w.int_values.num_elements();
  if (w.int_values.dtype() != DType::kInt32) {
    return absl::InternalError(
        absl::StrCat("weight '", w.tensor, "': integer values not int32"));
  }
  int64_t channels = 1, inner = 1;
  const int axis = w.per_channel ? w.channel_axis : -1;
  if (axis >= 0) {
    if (axis >= static_cast<int>(shape.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight '", w.tensor, "': bad channel axis"));
    }
    channels = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  const int64_t num_scales = static_cast<int64_t>(w.scales.size());
  if (num_scales != channels && num_scales != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight '", w.tensor, "': ", num_scales, " scales for ",
                     channels, " channels"));
  }
  const int32_t* ints = w.int_values.data<int32_t>();
  const int64_t lut_size = static_cast<int64_t>(w.lut_values.size());
  const size_t num_zps = w.zero_points.size();
  Tensor out(DType::kFloat, shape);
  float* o = out.mutable_data<float>();
  RETURN_IF_ERROR(ForEachChannelRun(
      n, num_scales == 1 ? 1 : channels, inner,
      [&](int64_t c, int64_t begin, int64_t end) -> absl::Status {
        const float scale = static_cast<float>(w.scales[c]);
        if (lut_size > 0) {
          const float threshold = static_cast<float>(w.thresholds[c]);
          for (int64_t i = begin; i < end; ++i) {
            const int64_t q = ints[i];
            if (q < 0 || q >= lut_size) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "weight '", w.tensor, "': LUT index out of range"));
            }
            // The LUT value on the int8 grid: lut / 2^7 * T; stored as
            // codebook (lut / 2^7, exact) times the per-channel T.
            o[i] = (w.lut_values[q] / 128.0f) * threshold;
          }
          return absl::OkStatus();
        }
        const int64_t zp =
            num_zps == 0 ? 0 : w.zero_points[num_zps == 1 ? 0 : c];
        for (int64_t i = begin; i < end; ++i) {
          o[i] = static_cast<float>(ints[i] - zp) * scale;
        }
        return absl::OkStatus();
      }));
  return out;
}

}  // namespace quantd

namespace quantd {

namespace {

// Whether `cached` are a node's results for its weight slots: one per slot
// with an initializer, on the same tensor, attribute and config.
bool MatchesSlots(const std::vector<WeightParams>& cached, const Node& node,
                  const NodePlan& plan, const Graph& g) {
  size_t k = 0;
  for (const WeightSlot& slot : plan.weights) {
    const std::string& name = node.Input(slot.input_index);
    if (g.FindInitializer(name) == nullptr) continue;
    if (k >= cached.size()) return false;
    const WeightParams& w = cached[k++];
    if (w.tensor != name || w.attr != slot.attr ||
        w.input_index != slot.input_index ||
        w.method != slot.config.weights_quantization_method() ||
        w.n_bits != slot.config.weights_n_bits()) {
      return false;
    }
  }
  return k == cached.size();
}

absl::Status WithNode(const Node& node, const std::string& where,
                      const absl::Status& status) {
  return absl::Status(
      status.code(), absl::StrCat(node.Label(), where, ": ", status.message()));
}

// The node's own output activations (not a preserving node's).
absl::Status SelectNodeActivations(const Node& node, const JobState& state,
                                   NodePlan* p) {
  if (!p->quantize_activation || p->preserving) return absl::OkStatus();
  auto it = state.stats.find(node.outputs[0]);
  auto a = SelectActivationParams(
      node.outputs[0], p->config,
      it == state.stats.end() ? nullptr : &it->second, p->known_min,
      p->known_max, p->forced_signed, state.options);
  if (!a.ok()) return WithNode(node, "", a.status());
  p->activation = *std::move(a);
  // Further float outputs: their own statistics, the same config.
  p->extra_activations.clear();
  for (size_t k = 1; k < node.outputs.size(); ++k) {
    auto sk = state.stats.find(node.outputs[k]);
    if (node.outputs[k].empty() || sk == state.stats.end()) continue;
    auto ak = SelectActivationParams(node.outputs[k], p->config, &sk->second,
                                     std::nullopt, std::nullopt,
                                     p->forced_signed, state.options);
    if (!ak.ok()) {
      return WithNode(node, absl::StrCat(" output ", k), ak.status());
    }
    p->extra_activations.push_back(*std::move(ak));
  }
  return absl::OkStatus();
}

// The node's weights: `cached` when they are this node's (MatchesSlots),
// else searched.
absl::Status SelectNodeWeights(const Node& node, const Graph& g,
                               const PtqOptions& options,
                               const std::vector<WeightParams>* cached,
                               const CancellationToken* cancel, NodePlan* p) {
  p->weight_results.clear();
  if (cached != nullptr && MatchesSlots(*cached, node, *p, g)) {
    p->weight_results = *cached;
    return absl::OkStatus();
  }
  for (const WeightSlot& slot : p->weights) {
    const std::string& name = node.Input(slot.input_index);
    const Tensor* t = g.FindInitializer(name);
    if (t == nullptr) continue;
    // Quantizers parallelise per channel themselves; nested use is safe.
    auto w = SelectWeightParams(name, *t, slot, options, nullptr, cancel);
    if (!w.ok()) return WithNode(node, "", w.status());
    p->weight_results.push_back(*std::move(w));
  }
  return absl::OkStatus();
}

// Heaviest nodes first (the weight searches' cost grows with the weight's
// size): with the classifier's large Gemm last in topological order, one
// thread would otherwise search it alone at the end. Each node writes only
// its own plan, so the order changes no result.
std::vector<int64_t> HeaviestFirst(const JobState& state) {
  const Graph& g = state.model.graph;
  const int64_t n = static_cast<int64_t>(g.nodes.size());
  std::vector<int64_t> cost(n, 0), order(n);
  for (int64_t i = 0; i < n; ++i) {
    order[i] = i;
    for (const WeightSlot& slot : state.plans[i].weights) {
      const Tensor* t = g.FindInitializer(g.nodes[i].Input(slot.input_index));
      if (t != nullptr) cost[i] += t->num_elements();
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return cost[a] > cost[b]; });
  return order;
}

// The quantized graph inputs' activations.
absl::Status SelectInputActivations(JobState* state) {
  if (!state->input_config.has_value()) return absl::OkStatus();
  for (const auto& in : state->model.graph.inputs) {
    auto it = state->stats.find(in.name);
    if (it == state->stats.end()) continue;
    ASSIGN_OR_RETURN(
        auto a, SelectActivationParams(in.name, *state->input_config,
                                       &it->second, std::nullopt, std::nullopt,
                                       std::nullopt, state->options));
    state->input_activations[in.name] = std::move(a);
  }
  return absl::OkStatus();
}

// Quantization-preserving nodes reuse their source's parameters, in
// topological order so chains of them resolve.
void ResolvePreservingNodes(JobState* state) {
  const Graph& g = state->model.graph;
  std::map<std::string, const ActivationParams*> by_tensor;
  for (auto& [name, a] : state->input_activations) by_tensor[name] = &a;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = state->plans[i];
    const Node& node = g.nodes[i];
    if (p.preserving) {
      auto it = by_tensor.find(p.preserved_from);
      if (it == by_tensor.end()) {
        // The source stayed float: so does this node (MCT disables it).
        p.preserving = false;
        p.quantize_activation = false;
        if (p.float_reason.empty()) {
          p.float_reason = "quantization preserving, input not quantized";
        }
        continue;
      }
      p.activation = *it->second;
      p.activation.tensor = node.outputs[0];
      p.activation.preserved_from = p.preserved_from;
      p.quantize_activation = true;
      // Every output of a preserving node (Split) carries the input's grid.
      p.extra_activations.clear();
      for (size_t k = 1; k < node.outputs.size(); ++k) {
        auto vi = g.value_info.find(node.outputs[k]);
        if (vi == g.value_info.end() || vi->second.dtype != DType::kFloat) {
          continue;
        }
        ActivationParams a = p.activation;
        a.tensor = node.outputs[k];
        p.extra_activations.push_back(std::move(a));
      }
    }
    if (p.quantize_activation) {
      by_tensor[node.outputs[0]] = &p.activation;
      for (const auto& a : p.extra_activations) by_tensor[a.tensor] = &a;
    }
  }
}

}  // namespace

bool SameWeightSelection(const PtqOptions& a, const PtqOptions& b) {
  return a.weights_error_method == b.weights_error_method &&
         a.l_p_value == b.l_p_value && a.hessian_scores == b.hessian_scores;
}

absl::Status SelectNodeParams(int node, JobState* state,
                              const CancellationToken* cancel) {
  const Graph& g = state->model.graph;
  NodePlan* p = &state->plans[node];
  RETURN_IF_ERROR(SelectNodeActivations(g.nodes[node], *state, p));
  return SelectNodeWeights(g.nodes[node], g, state->options, nullptr, cancel,
                           p);
}

absl::Status SelectAllParams(JobState* state, ThreadPool* pool,
                             const CancellationToken* cancel,
                             ProgressSink* progress,
                             WeightSelectionCache* cache) {
  const Graph& g = state->model.graph;
  const int64_t n = static_cast<int64_t>(g.nodes.size());
  const bool reuse = cache != nullptr && cache->options.has_value() &&
                     SameWeightSelection(*cache->options, state->options) &&
                     cache->per_node.size() == static_cast<size_t>(n);
  SampleProgress report{progress, stage::kSelect,
                        [](int64_t d, int64_t total) {
                          return absl::StrCat(d, "/", total, " nodes");
                        },
                        /*every=*/16};
  const std::vector<int64_t> order = HeaviestFirst(*state);
  // Errors are returned in graph order.
  std::vector<absl::Status> status(n);
  RETURN_IF_ERROR(ParallelForSamples(n, pool, nullptr, report, [&](int64_t j) {
    const int64_t i = order[j];
    if (cancel != nullptr && !(status[i] = cancel->Check()).ok()) {
      return absl::OkStatus();
    }
    NodePlan* p = &state->plans[i];
    status[i] = SelectNodeActivations(g.nodes[i], *state, p);
    if (status[i].ok()) {
      status[i] =
          SelectNodeWeights(g.nodes[i], g, state->options,
                            reuse ? &cache->per_node[i] : nullptr, cancel, p);
    }
    return absl::OkStatus();
  }));
  for (const absl::Status& st : status) RETURN_IF_ERROR(st);
  if (cache != nullptr) {  // copies share the integers' buffers
    cache->options = state->options;
    cache->per_node.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      cache->per_node[i] = state->plans[i].weight_results;
    }
  }
  RETURN_IF_ERROR(SelectInputActivations(state));
  ResolvePreservingNodes(state);
  return absl::OkStatus();
}

}  // namespace quantd
