#include "core/pipeline/corrections/activation_bias_correction.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/graph/transforms.h"
#include "core/pipeline/corrections/bias_correction.h"
#include "core/qdq/qdq_math.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Gemm, or a Conv whose kernel is 1 x 1 (MCT corrects only those: a larger
// kernel also sees padding, which quantization does not shift).
bool IsCorrectable(const Node& node, const Tensor& w) {
  if (!SupportsBiasCorrection(node) || w.rank() < 2) return false;
  if (node.op_type == "Gemm") return w.rank() == 2;
  for (int d = 2; d < w.rank(); ++d) {
    if (w.dim(d) != 1) return false;
  }
  return true;
}

// sum over the non-output axes of the float kernel, one per output.
std::vector<double> KernelSums(const Node& node, const Tensor& w) {
  auto d = w.span<float>();
  if (node.op_type == "Gemm") {
    const bool trans_b = node.GetInt("transB", 0) != 0;
    const int64_t rows = w.dim(0), cols = w.dim(1);
    std::vector<double> sums(trans_b ? rows : cols, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        sums[trans_b ? r : c] += d[r * cols + c];
      }
    }
    return sums;
  }
  const int64_t m = w.dim(0), per = w.num_elements() / m;  // W [M, C/g, 1...]
  std::vector<double> sums(m, 0.0);
  for (int64_t o = 0; o < m; ++o) {
    for (int64_t i = 0; i < per; ++i) sums[o] += d[o * per + i];
  }
  return sums;
}

}  // namespace

std::optional<double> ActivationMeanShift(const quantizers::Histogram& h,
                                          const ActivationParams& a) {
  if (h.edges.size() < 2 || h.counts.size() + 1 != h.edges.size() ||
      !a.lut_values.empty() || !(a.scale > 0)) {
    return std::nullopt;
  }
  auto storage = StorageForBits(a.n_bits, a.is_signed);
  if (!storage.ok()) return std::nullopt;
  const float scale = static_cast<float>(a.scale);
  auto q = [&](double x) {
    return static_cast<double>(DequantizeValue(
        QuantizeValue(static_cast<float>(x), scale, a.zero_point, storage->qmin,
                      storage->qmax),
        scale, a.zero_point));
  };
  double total = 0, shift = 0;
  for (size_t b = 0; b < h.counts.size(); ++b) {
    const double lo = h.edges[b], hi = h.edges[b + 1];
    shift += h.counts[b] * ((q(lo) + q(hi)) / 2 - (lo + hi) / 2);
    total += h.counts[b];
  }
  if (!(total > 0)) return std::nullopt;
  return shift / total;
}

absl::Status ApplyActivationBiasCorrection(JobState* state,
                                           const CancellationToken* cancel) {
  // Every quantized tensor's parameters, whoever quantizes it.
  std::map<std::string, const ActivationParams*> params;
  for (const auto& [tensor, a] : state->input_activations) params[tensor] = &a;
  for (const NodePlan& p : state->plans) {
    if (!p.activation.tensor.empty()) {
      params[p.activation.tensor] = &p.activation;
    }
    for (const auto& a : p.extra_activations) params[a.tensor] = &a;
  }
  const double threshold = state->options.activation_bias_correction_threshold;
  Graph& g = state->model.graph;
  for (Node& node : g.nodes) {
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    const Tensor* w = g.FindInitializer(node.Input(1));
    auto a = params.find(node.Input(0));
    auto st = state->stats.find(node.Input(0));
    if (w == nullptr || w->dtype() != DType::kFloat || a == params.end() ||
        st == state->stats.end() || !IsCorrectable(node, *w)) {
      continue;
    }
    const std::optional<double> d =
        ActivationMeanShift(st->second.histogram, *a->second);
    if (!d.has_value() || *d == 0) continue;
    if (threshold > 0) {
      const quantizers::Histogram& h = st->second.histogram;
      double mean = 0, total = 0;
      for (size_t b = 0; b < h.counts.size(); ++b) {
        mean += h.counts[b] * (h.edges[b] + h.edges[b + 1]) / 2;
        total += h.counts[b];
      }
      mean /= total;
      if (100 * std::fabs(*d) / std::fabs(mean) < threshold) continue;
    }
    std::vector<double> c = KernelSums(node, *w);
    for (double& v : c) v *= *d;
    RETURN_IF_ERROR(SubtractFromBias(c, &g, &node));
  }
  RemoveUnusedInitializers(&g);
  return absl::OkStatus();
}

}  // namespace quantd
