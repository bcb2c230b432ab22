#include "core/pipeline/corrections/bias_correction.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/transforms.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/util/status_macros.h"

namespace quantd {

bool SupportsBiasCorrection(const Node& node) {
  if (node.op_type == "Conv") return true;
  if (node.op_type == "Gemm") {
    return node.GetInt("transA", 0) == 0 && node.GetFloat("alpha", 1) == 1 &&
           node.GetFloat("beta", 1) == 1;
  }
  return false;
}

absl::StatusOr<std::vector<double>> BiasCorrectionTerm(
    const Node& node, const Tensor& w, const Tensor& wq,
    const std::vector<double>& mean_in) {
  if (w.shape() != wq.shape() || w.dtype() != DType::kFloat ||
      wq.dtype() != DType::kFloat || w.rank() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Label(), ": kernel shapes do not match"));
  }
  auto a = w.span<float>();
  auto b = wq.span<float>();
  if (node.op_type == "Conv") {
    // W [M, C/g, k...]; output m belongs to group m / (M/g).
    const int64_t m_out = w.dim(0), c_g = w.dim(1);
    const int64_t spatial = w.num_elements() / (m_out * c_g);
    const int64_t groups = node.GetInt("group", 1);
    if (groups <= 0 || m_out % groups != 0 ||
        static_cast<int64_t>(mean_in.size()) != c_g * groups) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": input has ", mean_in.size(),
                       " channels, kernel expects ", c_g * groups));
    }
    const int64_t per_group = m_out / groups;
    std::vector<double> c(m_out, 0.0);
    for (int64_t m = 0; m < m_out; ++m) {
      const int64_t g = m / per_group;
      for (int64_t j = 0; j < c_g; ++j) {
        double eps = 0;
        const int64_t base = (m * c_g + j) * spatial;
        for (int64_t s = 0; s < spatial; ++s) {
          eps += static_cast<double>(b[base + s]) - a[base + s];
        }
        c[m] += eps * mean_in[g * c_g + j];
      }
    }
    return c;
  }
  // Gemm: transB=1 -> W [N, K]; else W [K, N].
  const bool trans_b = node.GetInt("transB", 0) != 0;
  const int64_t n_out = trans_b ? w.dim(0) : w.dim(1);
  const int64_t k_in = trans_b ? w.dim(1) : w.dim(0);
  if (static_cast<int64_t>(mean_in.size()) != k_in) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Label(), ": input has ", mean_in.size(),
                     " features, kernel expects ", k_in));
  }
  std::vector<double> c(n_out, 0.0);
  for (int64_t n = 0; n < n_out; ++n) {
    for (int64_t k = 0; k < k_in; ++k) {
      const int64_t idx = trans_b ? n * k_in + k : k * n_out + n;
      c[n] += (static_cast<double>(b[idx]) - a[idx]) * mean_in[k];
    }
  }
  return c;
}

absl::Status SubtractFromBias(const std::vector<double>& c, Graph* g,
                              Node* node) {
  const int64_t m = static_cast<int64_t>(c.size());
  Tensor bias(DType::kFloat, {m});
  if (!node->Input(2).empty()) {
    const Tensor* b = g->FindInitializer(node->Input(2));
    if (b == nullptr || b->num_elements() != m) {
      return absl::OkStatus();  // dynamic bias: left as is
    }
    ASSIGN_OR_RETURN(Tensor bf, b->CastToFloat());
    bias = Tensor(DType::kFloat, b->shape());
    for (int64_t k = 0; k < m; ++k) {
      bias.mutable_data<float>()[k] = bf.data<float>()[k];
    }
  }
  float* out = bias.mutable_data<float>();
  for (int64_t k = 0; k < m; ++k) {
    out[k] = static_cast<float>(out[k] - c[k]);
  }
  const std::string name = UniqueTensorName(
      *g, absl::StrCat(node->name,
                       node->Input(2).empty() ? "_bias" : "_bias_corrected"));
  g->initializers[name] = std::move(bias);
  if (node->inputs.size() < 3) node->inputs.resize(3);
  node->inputs[2] = name;
  return absl::OkStatus();
}

absl::Status ApplyBiasCorrection(JobState* state,
                                 const CancellationToken* cancel) {
  Graph& g = state->model.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    Node& node = g.nodes[i];
    const NodePlan& p = state->plans[i];
    if (!SupportsBiasCorrection(node)) continue;
    const WeightParams* kernel = nullptr;
    for (const auto& w : p.weight_results) {
      if (w.input_index == 1 && w.attr != "pos_attr") kernel = &w;
    }
    if (kernel == nullptr) continue;
    auto mean = state->input_means.find(node.Input(0));
    if (mean == state->input_means.end()) continue;
    const Tensor* w = g.FindInitializer(node.Input(1));
    if (w == nullptr) continue;
    ASSIGN_OR_RETURN(Tensor wf, w->CastToFloat());
    ASSIGN_OR_RETURN(Tensor wq, DequantizedWeight(*kernel));
    ASSIGN_OR_RETURN(std::vector<double> c,
                     BiasCorrectionTerm(node, wf, wq, mean->second));
    RETURN_IF_ERROR(SubtractFromBias(c, &g, &node));
  }
  RemoveUnusedInitializers(&g);
  return absl::OkStatus();
}

}  // namespace quantd
