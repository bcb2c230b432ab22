#include "core/pipeline/prep/channel_equalization.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/graph/graph_index.h"
#include "core/pipeline/prep/channel_scaling.h"

namespace quantd {

double RectifiedGaussianStd(double mu, double sigma) {
  if (!(sigma > 0)) return 0;  // a constant stays constant after the ReLU
  const double var = sigma * sigma;
  const double pdf_term = var * std::exp(-mu * mu / (2 * var));
  const double cdf2 = std::erf(mu / (std::sqrt(2.0) * sigma)) + 1;  // 2 Phi
  const double norm = 1 / std::sqrt(2 * var * M_PI);
  const double mean =
      norm * (std::sqrt(M_PI / 2) * sigma * mu * cdf2 + pdf_term);
  const double second =
      norm *
      (std::sqrt(M_PI / 2) * sigma * (mu * mu + var) * cdf2 + mu * pdf_term);
  return std::sqrt(std::max(second - mean * mean, 0.0));
}

absl::StatusOr<int> EqualizeActivationChannels(Model* model) {
  Graph& g = model->graph;
  const GraphIndex index(g);
  int equalized = 0;
  for (const Node& bn : g.nodes) {
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() < 3 ||
        bn.outputs.size() != 1) {
      continue;
    }
    const int first = index.Producer(bn.inputs[0]);
    if (first < 0 || !IsLinear2d(g.nodes[first]) ||
        index.NumUses(bn.inputs[0]) != 1 || index.NumUses(bn.outputs[0]) != 1) {
      continue;
    }
    const int relu = index.Consumers(bn.outputs[0])[0];
    if (g.nodes[relu].op_type != "Relu" ||
        index.NumUses(g.nodes[relu].outputs[0]) != 1) {
      continue;
    }
    int second = index.Consumers(g.nodes[relu].outputs[0])[0];
    if (IsZeroPad(g, g.nodes[second])) {
      if (index.NumUses(g.nodes[second].outputs[0]) != 1) continue;
      second = index.Consumers(g.nodes[second].outputs[0])[0];
    }
    const Node& next = g.nodes[second];
    if (!IsLinear2d(next) || next.inputs.size() < 2) continue;
    Tensor* gamma = OwnFloatInit(&g, index, bn.inputs[1]);
    Tensor* beta = OwnFloatInit(&g, index, bn.inputs[2]);
    Tensor* w = OwnFloatInit(&g, index, next.inputs[1]);
    if (gamma == nullptr || beta == nullptr || w == nullptr ||
        gamma->num_elements() != beta->num_elements()) {
      continue;
    }
    const int64_t c = gamma->num_elements();
    std::vector<double> s(c);
    bool changes = false;
    for (int64_t i = 0; i < c; ++i) {
      const double std_after = RectifiedGaussianStd(
          beta->data<float>()[i], std::fabs(gamma->data<float>()[i]));
      s[i] = std_after > 0 ? std::min(1 / std_after, 1.0) : 1.0;
      changes |= s[i] != 1.0;
    }
    if (!changes) continue;
    Tensor scaled_w = w->Clone();
    if (!ScaleInputChannels(next, s, &scaled_w)) continue;
    *w = std::move(scaled_w);
    auto gd = gamma->mutable_span<float>();
    auto bd = beta->mutable_span<float>();
    for (int64_t i = 0; i < c; ++i) {
      gd[i] = static_cast<float>(gd[i] * s[i]);
      bd[i] = static_cast<float>(bd[i] * s[i]);
    }
    ++equalized;
  }
  return equalized;
}

}  // namespace quantd
