#include "core/pipeline/export/qdq_lowering.h"

#include <cstring>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/pipeline/export/float_weight_guard.h"
#include "core/qdq/qdq_math.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

bool IsUniform(v1::QuantizationMethod m) {
  return m == v1::QUANTIZATION_METHOD_UNIFORM;
}
bool IsLut(v1::QuantizationMethod m) {
  return m == v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER ||
         m == v1::QUANTIZATION_METHOD_LUT_SYM_QUANTIZER;
}

absl::StatusOr<QdqActivation> LowerActivation(const ActivationParams& a,
                                              const ExportOptions& options) {
  QdqActivation q;
  q.tensor = a.tensor;
  const bool is_signed = !IsUniform(a.method) && a.is_signed;
  ASSIGN_OR_RETURN(q.storage, StorageForBits(a.n_bits, is_signed));
  q.scale = static_cast<float>(a.scale);
  q.zero_point = a.zero_point;
  // Grids below 8 bits (mixed precision's 4/2-bit activations) are stored
  // in 8 bits and clipped to the grid (same values): ONNX Runtime has no
  // kernels on 4-bit activations, and at its default level its
  // Clip+QuantizeLinear fusion rejects a 4-bit zero point.
  if (a.n_bits < 8) q.storage.dtype = is_signed ? DType::kInt8 : DType::kUint8;
  // 8-bit storage may take the other signedness by shifting the zero point
  // and the grid (same real values); int8 unless asked otherwise (job.proto,
  // ActivationStorage: ORT's U8S8 kernels saturate on CPUs without VNNI).
  if (a.n_bits <= 8) {
    const ActivationStorage storage = options.activation_storage;
    const bool want_unsigned = storage == ActivationStorage::kUint8;
    const bool want_signed = storage == ActivationStorage::kInt8;
    const bool stored_signed = q.storage.dtype == DType::kInt8;
    if ((want_unsigned && stored_signed) || (want_signed && !stored_signed)) {
      const int64_t shift = stored_signed ? 128 : -128;
      q.storage.dtype = stored_signed ? DType::kUint8 : DType::kInt8;
      q.storage.qmin += shift;
      q.storage.qmax += shift;
      q.zero_point += shift;
    }
  }
  // A quantization-preserving output holds values of its source's grid,
  // clipped already: a second Clip changes nothing, and ORT (opset 21,
  // level extended and up) fails on MaxPool -> Clip -> QuantizeLinear.
  if (a.n_bits < 8 && !a.preserved_from.empty()) {
    q.storage.qmin = DTypeMin(q.storage.dtype);
    q.storage.qmax = DTypeMax(q.storage.dtype);
  }
  if (!(q.scale > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation '", a.tensor, "': scale ", a.scale, " not positive"));
  }
  return q;
}

absl::StatusOr<QdqWeight> LowerWeight(const Node& node, const WeightParams& w,
                                      const Tensor& weight,
                                      const ExportOptions& options) {
  const std::string what = absl::StrCat(node.Label(), " input ", w.input_index);
  QdqWeight q;
  q.node = node.name;
  q.input_index = w.input_index;
  q.axis = w.per_channel ? w.channel_axis : -1;
  if (w.int_values.dtype() != DType::kInt32 ||
      w.int_values.shape() != weight.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": integer values do not match the weight shape"));
  }
  q.int_values = w.int_values;
  const int64_t lut_size = static_cast<int64_t>(w.lut_values.size());
  if (IsLut(w.method)) {
    // value = lut / 2^7 * T per channel.
    for (double t : w.thresholds) q.scales.push_back(static_cast<float>(t));
    if (options.lut_snap_to_int8) {
      // Exact: lut * (T / 2^7) with integer lut in [-128, 127].
      for (float& s : q.scales) s /= 128.0f;
      int32_t* v = q.int_values.mutable_data<int32_t>();
      for (int64_t i = 0; i < q.int_values.num_elements(); ++i) {
        if (v[i] < 0 || v[i] >= lut_size) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, ": LUT index out of range"));
        }
        v[i] = static_cast<int32_t>(w.lut_values[v[i]]);
      }
      q.storage = {DType::kInt8, -128, 127};
    } else {
      for (float l : w.lut_values) q.codebook.push_back(l / 128.0f);
      q.storage = {DType::kUint8, 0, 255};
    }
  } else {
    ASSIGN_OR_RETURN(q.storage, StorageForBits(w.n_bits, !IsUniform(w.method)));
    for (double s : w.scales) q.scales.push_back(static_cast<float>(s));
    q.zero_points = w.zero_points;
  }
  if (q.axis < 0 && q.scales.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": per-tensor weight with ", q.scales.size(), " scales"));
  }
  if (q.zero_points.size() == 1 && q.scales.size() > 1) {
    q.zero_points.resize(q.scales.size(), q.zero_points[0]);
  }
  return q;
}

// The kernels ONNX Runtime fuses into its integer GEMM (QLinearConv,
// ConvInteger, QGemm, MatMulInteger / QLinearMatMul).
bool RunsOnIntegerGemm(const Node& node, int input_index) {
  return input_index == 1 &&
         (node.op_type == "Conv" || node.op_type == "ConvTranspose" ||
          node.op_type == "Gemm" || node.op_type == "MatMul");
}

// int8 integers as uint8 (ExportOptions.weight_storage): integers, range and
// zero points + 128, the same values. After the int32 biases, which need
// the kernel's zero point 0 as the job chose it, not as it is stored.
void StoreAsUint8(QdqWeight* w) {
  if (w->storage.dtype != DType::kInt8 || !w->codebook.empty()) return;
  w->storage = {DType::kUint8, w->storage.qmin + 128, w->storage.qmax + 128};
  if (w->zero_points.empty()) w->zero_points.assign(w->scales.size(), 0);
  for (int64_t& z : w->zero_points) z += 128;
  int32_t* v = w->int_values.mutable_data<int32_t>();
  for (int64_t i = 0; i < w->int_values.num_elements(); ++i) v[i] += 128;
}

}  // namespace

ModelQuantization QuantizationOf(const JobState& state) {
  const Graph& g = state.model.graph;
  ModelQuantization m;
  for (const auto& in : g.inputs) {
    auto it = state.input_activations.find(in.name);
    if (it != state.input_activations.end()) m.inputs.push_back(&it->second);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodePlan& p = state.plans[i];
    NodeQuantization n;
    n.node = g.nodes[i].name;
    if (p.quantize_activation) {
      n.activations.push_back(&p.activation);
      for (const auto& a : p.extra_activations) n.activations.push_back(&a);
    }
    if (!p.weight_results.empty()) n.weights = &p.weight_results;
    m.nodes.push_back(std::move(n));
  }
  return m;
}

absl::StatusOr<QdqPlan> LowerToQdqPlan(const JobState& state,
                                       const ExportOptions& options) {
  return LowerToQdqPlan(state.model.graph, QuantizationOf(state), options);
}

absl::StatusOr<QdqPlan> LowerToQdqPlan(const Graph& g,
                                       const ModelQuantization& quantization,
                                       const ExportOptions& options) {
  QdqPlan plan;
  std::map<std::string, const Node*> nodes;
  for (const Node& n : g.nodes) nodes[n.name] = &n;
  std::map<std::string, float> act_scale;
  for (const ActivationParams* a : quantization.inputs) {
    ASSIGN_OR_RETURN(QdqActivation q, LowerActivation(*a, options));
    act_scale[q.tensor] = q.scale;
    plan.activations.push_back(std::move(q));
  }
  for (const NodeQuantization& qn : quantization.nodes) {
    for (const ActivationParams* a : qn.activations) {
      ASSIGN_OR_RETURN(QdqActivation q, LowerActivation(*a, options));
      act_scale[q.tensor] = q.scale;
      plan.activations.push_back(std::move(q));
    }
  }
  for (const NodeQuantization& qn : quantization.nodes) {
    if (qn.weights == nullptr || qn.weights->empty()) continue;
    auto it = nodes.find(qn.node);
    if (it == nodes.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantized node '", qn.node, "' is not in the model"));
    }
    const Node& node = *it->second;
    int kernel_index = -1;
    bool bias_done = false;
    for (const WeightParams& w : *qn.weights) {
      const Tensor* t = g.FindInitializer(node.Input(w.input_index));
      if (t == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Label(), ": input ", w.input_index,
                         " is not a constant initializer"));
      }
      ASSIGN_OR_RETURN(QdqWeight q, LowerWeight(node, w, *t, options));
      plan.weights.push_back(std::move(q));
      if (w.input_index == 1) {
        kernel_index = static_cast<int>(plan.weights.size()) - 1;
      }
      if (w.input_index == 2) bias_done = true;
    }
    // int32 bias (scale = x_scale * w_scale) for Conv and Gemm whose input
    // and per-output-channel (or per-tensor) kernel are quantized.
    const bool conv = node.op_type == "Conv";
    const bool gemm = node.op_type == "Gemm";
    if (bias_done || kernel_index < 0 ||
        !plan.weights[kernel_index].codebook.empty() || !(conv || gemm) ||
        node.Input(2).empty()) {
      continue;
    }
    auto x = act_scale.find(node.Input(0));
    const Tensor* b = g.FindInitializer(node.Input(2));
    if (x == act_scale.end() || b == nullptr || b->dtype() != DType::kFloat ||
        b->rank() != 1) {
      continue;
    }
    const QdqWeight* kernel = &plan.weights[kernel_index];
    int out_axis = 0;
    if (gemm) {
      if (node.GetInt("transA", 0) != 0 || node.GetFloat("alpha", 1) != 1 ||
          node.GetFloat("beta", 1) != 1) {
        continue;
      }
      out_axis = node.GetInt("transB", 0) != 0 ? 0 : 1;
    }
    const int64_t m = b->dim(0);
    const bool per_tensor = kernel->axis < 0;
    if (!per_tensor && (kernel->axis != out_axis ||
                        static_cast<int64_t>(kernel->scales.size()) != m)) {
      continue;
    }
    bool zero_zp = true;
    for (int64_t z : kernel->zero_points) zero_zp = zero_zp && z == 0;
    if (!zero_zp) continue;
    QuantizedBias qb =
        QuantizeBias(b->span<float>(), x->second, kernel->scales);
    QdqWeight bias;
    bias.node = node.name;
    bias.input_index = 2;
    bias.storage = {DType::kInt32, DTypeMin(DType::kInt32),
                    DTypeMax(DType::kInt32)};
    bias.axis = 0;
    bias.scales = qb.scales;
    bias.int_values = Tensor(DType::kInt32, {m});
    std::memcpy(bias.int_values.mutable_raw(), qb.values.data(), m * 4);
    bool ok = true;
    for (float s : bias.scales) ok = ok && s > 0;
    if (ok) plan.weights.push_back(std::move(bias));
  }
  if (options.weight_storage == WeightStorage::kUint8) {
    for (QdqWeight& w : plan.weights) {
      auto n = nodes.find(w.node);
      if (n != nodes.end() && RunsOnIntegerGemm(*n->second, w.input_index)) {
        StoreAsUint8(&w);
      }
    }
  }
  // Float weights that ONNX Runtime would quantize on its own.
  GuardFloatWeights(g, &plan);
  return plan;
}

}  // namespace quantd
