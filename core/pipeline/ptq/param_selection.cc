#include "core/pipeline/ptq/param_selection.h"

#include <cmath>
#include <cstring>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/quantizers/lut_kmeans.h"
#include "core/quantizers/outlier_filter.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/quantizer.h"
#include "core/quantizers/selection.h"
#include "core/quantizers/signedness.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

using quantizers::QuantizationMethod;

QuantizationMethod ToMethod(v1::QuantizationMethod m) {
  return static_cast<QuantizationMethod>(static_cast<int>(m));
}

// The affine form of a threshold grid: scale = T / 2^(n - signed), zp 0.
void SetThresholdGrid(double threshold, bool is_signed, int n_bits,
                      v1::ActivationQuantization* a) {
  a->set_threshold(threshold);
  a->set_scale(quantizers::CalculateDelta(threshold, n_bits, is_signed));
  a->set_zero_point(0);
}

// The affine form of a uniform range after MCT's zero-inclusion fix:
// scale = (b - a) / (2^n - 1), zp = -round(a / scale).
void SetRangeGrid(double range_min, double range_max, int n_bits,
                  v1::ActivationQuantization* a) {
  auto [lo, hi] =
      quantizers::FixRangeToIncludeZero(range_min, range_max, n_bits);
  a->set_range_min(lo);
  a->set_range_max(hi);
  double scale = (hi - lo) / ((int64_t{1} << n_bits) - 1);
  if (!(scale > 0)) scale = quantizers::kMinThreshold;
  a->set_scale(scale);
  a->set_zero_point(static_cast<int64_t>(std::nearbyint(-lo / scale)));
}

v1::Tensor IntTensor(const std::vector<int32_t>& ints,
                     const std::vector<int64_t>& shape, DType dtype) {
  v1::Tensor t;
  t.set_data_type(static_cast<v1::DataType>(dtype));
  for (int64_t d : shape) t.add_dims(d);
  std::string raw;
  if (dtype == DType::kInt8 || dtype == DType::kUint8) {
    raw.resize(ints.size());
    for (size_t i = 0; i < ints.size(); ++i)
      raw[i] = static_cast<char>(ints[i]);
  } else if (dtype == DType::kInt16 || dtype == DType::kUint16) {
    raw.resize(ints.size() * 2);
    for (size_t i = 0; i < ints.size(); ++i) {
      uint16_t v = static_cast<uint16_t>(ints[i]);
      std::memcpy(&raw[2 * i], &v, 2);
    }
  } else {
    raw.resize(ints.size() * 4);
    std::memcpy(raw.data(), ints.data(), raw.size());
  }
  t.set_raw_data(std::move(raw));
  return t;
}

}  // namespace

absl::StatusOr<v1::ActivationQuantization> SelectActivationParams(
    const std::string& tensor, const v1::OpQuantizationConfig& config,
    const TensorStats* stats, std::optional<double> known_min,
    std::optional<double> known_max, std::optional<bool> forced_signed,
    const PtqOptions& options) {
  v1::ActivationQuantization a;
  a.set_tensor(tensor);
  a.set_method(config.activation_quantization_method());
  const int n_bits = config.activation_n_bits();
  a.set_n_bits(n_bits);
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
  a.set_is_signed(is_signed);
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
      a.set_is_signed(false);  // the uniform grid is [0, 2^n - 1] + zp
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
      a.set_is_signed(l.is_signed);
      a.set_n_bits(8);
      SetThresholdGrid(l.threshold, l.is_signed, 8, &a);
      for (double v : l.lut_values) a.add_lut_values(static_cast<float>(v));
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

absl::StatusOr<v1::WeightQuantization> SelectWeightParams(
    const std::string& tensor_name, const Tensor& weight,
    const WeightSlot& slot, const PtqOptions& options, ThreadPool* pool,
    const CancellationToken* cancel) {
  v1::WeightQuantization w;
  w.set_attr(slot.attr);
  w.set_input_index(slot.input_index);
  w.set_tensor(tensor_name);
  const v1::AttributeQuantizationConfig& c = slot.config;
  w.set_method(c.weights_quantization_method());
  const int n_bits = c.weights_n_bits();
  w.set_n_bits(n_bits);
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
      for (double v : t->threshold) w.add_thresholds(v);
      ASSIGN_OR_RETURN(q, quantizers::QuantizeSymmetric(view, t->threshold,
                                                        axis, n_bits, true));
      storage = n_bits <= 8 ? DType::kInt8 : DType::kInt16;
      break;
    }
    case QuantizationMethod::kUniform: {
      ASSIGN_OR_RETURN(auto r, quantizers::UniformSelectionTensor(view, o));
      if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
      axis = r.channel_axis;
      for (double v : r.range_min) w.add_range_min(v);
      for (double v : r.range_max) w.add_range_max(v);
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
      for (double v : l.scale_per_channel) w.add_thresholds(v);
      for (double v : l.lut_values) w.add_lut_values(static_cast<float>(v));
      ASSIGN_OR_RETURN(q, quantizers::QuantizeLut(view, l.lut_values,
                                                  l.scale_per_channel, axis));
      storage = DType::kUint8;  // indices
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": unknown method ", c.weights_quantization_method()));
  }
  w.set_per_channel(per_channel);
  w.set_channel_axis(per_channel ? axis : -1);
  for (double s : q.scales) w.add_scales(s);
  for (int32_t z : q.zero_points) w.add_zero_points(z);
  *w.mutable_int_values() = IntTensor(q.ints, f.shape(), storage);
  w.mutable_int_values()->set_name(tensor_name);
  return w;
}

absl::StatusOr<Tensor> DequantizedWeight(const v1::WeightQuantization& w,
                                         const std::vector<int64_t>& shape) {
  const v1::Tensor& t = w.int_values();
  const int64_t n = NumElements(shape);
  const DType dtype = static_cast<DType>(t.data_type());
  const size_t esize = DTypeSize(dtype);
  if (n < 0 || esize == 0 ||
      t.raw_data().size() != static_cast<size_t>(n) * esize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight '", w.tensor(), "': integer values do not match its shape"));
  }
  auto get = [&](int64_t i) -> int64_t {
    const char* p = t.raw_data().data() + i * esize;
    switch (dtype) {
      case DType::kInt8:
        return *reinterpret_cast<const int8_t*>(p);
      case DType::kUint8:
        return *reinterpret_cast<const uint8_t*>(p);
      case DType::kInt16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      case DType::kUint16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      default: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
    }
  };
  int64_t channels = 1, inner = 1;
  const int axis = w.per_channel() ? w.channel_axis() : -1;
  if (axis >= 0) {
    if (axis >= static_cast<int>(shape.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight '", w.tensor(), "': bad channel axis"));
    }
    channels = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  if (w.scales_size() != channels && w.scales_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight '", w.tensor(), "': ", w.scales_size(),
                     " scales for ", channels, " channels"));
  }
  Tensor out(DType::kFloat, shape);
  float* o = out.mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = w.scales_size() == 1 ? 0 : (i / inner) % channels;
    const float scale = static_cast<float>(w.scales(c));
    const int64_t q = get(i);
    if (w.lut_values_size() > 0) {
      if (q < 0 || q >= w.lut_values_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("weight '", w.tensor(), "': LUT index out of range"));
      }
      // The LUT value on the int8 grid: lut / 2^7 * T; stored as
      // codebook (lut / 2^7, exact) times the per-channel T.
      o[i] = (w.lut_values(q) / 128.0f) * static_cast<float>(w.thresholds(c));
    } else {
      const int64_t zp = w.zero_points_size() == 0
                             ? 0
                             : w.zero_points(w.zero_points_size() == 1 ? 0 : c);
      o[i] = static_cast<float>(q - zp) * scale;
    }
  }
  return out;
}

}  // namespace quantd

namespace quantd {

absl::Status SelectAllParams(JobState* state, ThreadPool* pool,
                             const CancellationToken* cancel,
                             ProgressSink* progress) {
  Graph& g = state->model.graph;
  const int64_t n = static_cast<int64_t>(g.nodes.size());
  SampleProgress report{progress, "select",
                        [](int64_t d, int64_t total) {
                          return absl::StrCat(d, "/", total, " nodes");
                        },
                        /*every=*/16};
  auto select_node = [&](int64_t i) -> absl::Status {
    const Node& node = g.nodes[i];
    NodePlan& p = state->plans[i];
    if (p.quantize_activation && !p.preserving) {
      auto it = state->stats.find(node.outputs[0]);
      auto a = SelectActivationParams(
          node.outputs[0], p.config,
          it == state->stats.end() ? nullptr : &it->second, p.known_min,
          p.known_max, p.forced_signed, state->options);
      if (!a.ok()) {
        return absl::Status(
            a.status().code(),
            absl::StrCat(node.Label(), ": ", a.status().message()));
      }
      p.activation = *std::move(a);
      // Further float outputs: their own statistics, the same config.
      p.extra_activations.clear();
      for (size_t k = 1; k < node.outputs.size(); ++k) {
        auto sk = state->stats.find(node.outputs[k]);
        if (node.outputs[k].empty() || sk == state->stats.end()) continue;
        auto ak = SelectActivationParams(node.outputs[k], p.config, &sk->second,
                                         std::nullopt, std::nullopt,
                                         p.forced_signed, state->options);
        if (!ak.ok()) {
          return absl::Status(ak.status().code(),
                              absl::StrCat(node.Label(), " output ", k, ": ",
                                           ak.status().message()));
        }
        p.extra_activations.push_back(*std::move(ak));
      }
    }
    p.weight_results.clear();
    for (const WeightSlot& slot : p.weights) {
      const std::string& name = node.Input(slot.input_index);
      const Tensor* t = g.FindInitializer(name);
      if (t == nullptr) continue;
      // Quantizers parallelise per channel themselves; nested use is safe.
      auto w =
          SelectWeightParams(name, *t, slot, state->options, nullptr, cancel);
      if (!w.ok()) {
        return absl::Status(
            w.status().code(),
            absl::StrCat(node.Label(), ": ", w.status().message()));
      }
      p.weight_results.push_back(*std::move(w));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ParallelForSamples(n, pool, cancel, report, select_node));
  // Graph inputs.
  if (state->input_config.has_value()) {
    for (const auto& in : g.inputs) {
      auto it = state->stats.find(in.name);
      if (it == state->stats.end()) continue;
      ASSIGN_OR_RETURN(
          auto a, SelectActivationParams(
                      in.name, *state->input_config, &it->second, std::nullopt,
                      std::nullopt, std::nullopt, state->options));
      state->input_activations[in.name] = std::move(a);
    }
  }
  // Quantization-preserving nodes reuse their source's parameters, in
  // topological order so chains of them resolve.
  std::map<std::string, const v1::ActivationQuantization*> by_tensor;
  for (auto& [name, a] : state->input_activations) by_tensor[name] = &a;
  for (int64_t i = 0; i < n; ++i) {
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
      p.activation.set_tensor(node.outputs[0]);
      p.activation.set_preserved_from(p.preserved_from);
      p.quantize_activation = true;
      // Every output of a preserving node (Split) carries the input's grid.
      p.extra_activations.clear();
      for (size_t k = 1; k < node.outputs.size(); ++k) {
        auto vi = g.value_info.find(node.outputs[k]);
        if (vi == g.value_info.end() || vi->second.dtype != DType::kFloat) {
          continue;
        }
        v1::ActivationQuantization a = p.activation;
        a.set_tensor(node.outputs[k]);
        p.extra_activations.push_back(std::move(a));
      }
    }
    if (p.quantize_activation) {
      by_tensor[node.outputs[0]] = &p.activation;
      for (const auto& a : p.extra_activations) by_tensor[a.tensor()] = &a;
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
