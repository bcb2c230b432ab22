// FoldBatchNorms and FoldBatchNormsForward (transforms.h), after MCT's
// batchnorm_folding.py. Arithmetic is float32, as MCT's numpy arrays are.
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"

namespace quantd {
namespace {

const Tensor* FloatInit(const Graph& g, const std::string& name) {
  const Tensor* t = g.FindInitializer(name);
  return t != nullptr && t->dtype() == DType::kFloat ? t : nullptr;
}

// Per-channel affine form of an inference BatchNormalization:
// y = x * scale + shift, with scale = gamma / sqrt(var + eps) and
// shift = beta - mean * scale.
struct BnAffine {
  std::vector<float> gamma_scale;  // s
  std::vector<float> beta, mean;
};

std::optional<BnAffine> ReadBatchNorm(const Graph& g, const Node& bn) {
  if (bn.op_type != "BatchNormalization" ||
      (!bn.domain.empty() && bn.domain != "ai.onnx")) {
    return std::nullopt;
  }
  if (bn.GetInt("training_mode", 0) != 0 || bn.inputs.size() < 5) {
    return std::nullopt;
  }
  for (size_t i = 1; i < bn.outputs.size(); ++i) {
    if (!bn.outputs[i].empty()) return std::nullopt;  // training outputs
  }
  const Tensor* gamma = FloatInit(g, bn.Input(1));
  const Tensor* beta = FloatInit(g, bn.Input(2));
  const Tensor* mean = FloatInit(g, bn.Input(3));
  const Tensor* var = FloatInit(g, bn.Input(4));
  if (!gamma || !beta || !mean || !var) return std::nullopt;
  const int64_t c = gamma->num_elements();
  if (gamma->rank() != 1 || c == 0 || beta->num_elements() != c ||
      mean->num_elements() != c || var->num_elements() != c) {
    return std::nullopt;
  }
  const float eps = bn.GetFloat("epsilon", 1e-5f);
  BnAffine a;
  for (int64_t i = 0; i < c; ++i) {
    a.gamma_scale.push_back(gamma->data<float>()[i] /
                            std::sqrt(var->data<float>()[i] + eps));
    a.beta.push_back(beta->data<float>()[i]);
    a.mean.push_back(mean->data<float>()[i]);
  }
  return a;
}

// Stores `value` as the initializer read by input `k` of `node`: in place when
// nothing else reads it, else under a new name.
void SetNodeInitializer(Graph* g, const GraphIndex& index, Node* node, size_t k,
                        Tensor value, const std::string& suffix) {
  std::string name = node->Input(k);
  if (name.empty() || index.NumUses(name) != 1) {
    name = UniqueTensorName(*g, absl::StrCat(node->name, suffix));
  }
  g->sub_byte_types.erase(name);
  g->initializers[name] = std::move(value);
  if (node->inputs.size() <= k) node->inputs.resize(k + 1);
  node->inputs[k] = name;
}

// Folds `bn` into its producer `p`; false when a condition is not met.
bool FoldInto(Graph* g, const GraphIndex& index, Node* p, const Node& bn,
              const BnAffine& a) {
  const int64_t c = static_cast<int64_t>(a.gamma_scale.size());
  const Tensor* w = FloatInit(*g, p->Input(1));
  if (w == nullptr || w->rank() < 2) return false;
  const Tensor* b = p->Input(2).empty() ? nullptr : FloatInit(*g, p->Input(2));
  if (!p->Input(2).empty() && b == nullptr) return false;

  Tensor new_w = w->Clone();
  float* wd = new_w.mutable_data<float>();
  std::vector<float> bias(c, 0.f);
  if (p->op_type == "Conv") {
    if (w->dim(0) != c) return false;
    const int64_t per = w->num_elements() / c;
    for (int64_t m = 0; m < c; ++m) {
      for (int64_t i = 0; i < per; ++i) wd[m * per + i] *= a.gamma_scale[m];
    }
    if (b != nullptr) {
      if (b->num_elements() != c) return false;
      for (int64_t m = 0; m < c; ++m) bias[m] = b->data<float>()[m];
    }
  } else if (p->op_type == "ConvTranspose") {
    // W = [C_in, M/group, k...]; output channel = group_of(c_in)*(M/g) + j.
    const int64_t group = p->GetInt("group", 1);
    const int64_t m_per = w->dim(1);
    if (group <= 0 || m_per * group != c || w->dim(0) % group != 0) {
      return false;
    }
    if (m_per == 0 || w->dim(0) == 0) return false;
    const int64_t cin_per = w->dim(0) / group;
    const int64_t k = w->num_elements() / (w->dim(0) * m_per);
    for (int64_t ci = 0; ci < w->dim(0); ++ci) {
      for (int64_t j = 0; j < m_per; ++j) {
        const float s = a.gamma_scale[(ci / cin_per) * m_per + j];
        for (int64_t i = 0; i < k; ++i) wd[(ci * m_per + j) * k + i] *= s;
      }
    }
    if (b != nullptr) {
      if (b->num_elements() != c) return false;
      for (int64_t m = 0; m < c; ++m) bias[m] = b->data<float>()[m];
    }
  } else if (p->op_type == "Gemm") {
    // y = alpha*A*B' + beta*C with B' = B or B^T; channel = column of y.
    if (w->rank() != 2) return false;
    const bool trans_b = p->GetInt("transB", 0) != 0;
    const int64_t n = trans_b ? w->dim(0) : w->dim(1);
    if (n != c) return false;
    for (int64_t r = 0; r < w->dim(0); ++r) {
      for (int64_t q = 0; q < w->dim(1); ++q) {
        wd[r * w->dim(1) + q] *= a.gamma_scale[trans_b ? r : q];
      }
    }
    if (b != nullptr) {
      const float beta_attr = p->GetFloat("beta", 1.f);
      if (b->num_elements() == 1) {
        bias.assign(c, beta_attr * b->data<float>()[0]);
      } else if (b->num_elements() == c && b->shape().back() == c) {
        for (int64_t m = 0; m < c; ++m) {
          bias[m] = beta_attr * b->data<float>()[m];
        }
      } else {
        return false;  // C of shape [M, N] is not per-channel
      }
    }
  } else {
    return false;
  }
  Tensor new_b(DType::kFloat, {c});
  float* bd = new_b.mutable_data<float>();
  for (int64_t m = 0; m < c; ++m) {
    bd[m] = a.beta[m] + (bias[m] - a.mean[m]) * a.gamma_scale[m];
  }
  SetNodeInitializer(g, index, p, 1, std::move(new_w), "_weight_bnfolded");
  SetNodeInitializer(g, index, p, 2, std::move(new_b), "_bias_bnfolded");
  if (p->op_type == "Gemm") {
    Attribute one;
    one.type = Attribute::Type::kFloat;
    one.f = 1.f;
    p->attributes["beta"] = one;
  }
  // The producer now outputs the BN's tensor; downstream names are unchanged.
  g->value_info.erase(p->outputs[0]);
  p->outputs[0] = bn.outputs[0];
  return true;
}

}  // namespace

absl::Status FoldBatchNorms(Model* model) {
  Graph& g = model->graph;
  for (bool changed = true; changed;) {
    changed = false;
    GraphIndex index(g);
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& bn = g.nodes[n];
      std::optional<BnAffine> a = ReadBatchNorm(g, bn);
      if (!a) continue;
      const int p = index.Producer(bn.Input(0));
      if (p < 0) continue;
      Node& prod = g.nodes[p];
      if (prod.op_type != "Conv" && prod.op_type != "ConvTranspose" &&
          prod.op_type != "Gemm") {
        continue;
      }
      if (prod.outputs.size() != 1 || index.NumUses(prod.outputs[0]) != 1) {
        continue;  // MCT: skip a conv whose output is reused
      }
      if (!FoldInto(&g, index, &prod, bn, *a)) continue;
      std::vector<bool> remove(g.nodes.size(), false);
      remove[n] = true;
      RemoveNodes(&g, remove);
      RemoveUnusedInitializers(&g);
      changed = true;
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status FoldBatchNormsForward(Model* model) {
  Graph& g = model->graph;
  for (bool changed = true; changed;) {
    changed = false;
    GraphIndex index(g);
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& bn = g.nodes[n];
      std::optional<BnAffine> a = ReadBatchNorm(g, bn);
      if (!a) continue;
      const std::string& y = bn.outputs[0];
      if (index.NumUses(y) != 1 || index.NumConsumers(y) != 1) continue;
      Node& conv = g.nodes[index.Consumers(y)[0]];
      if (conv.op_type != "Conv" || conv.Input(0) != y ||
          conv.GetInt("group", 1) != 1) {
        continue;
      }
      const std::string auto_pad = conv.GetString("auto_pad", "NOTSET");
      bool no_pad = auto_pad == "NOTSET" || auto_pad == "VALID";
      for (int64_t p : conv.GetInts("pads")) no_pad &= p == 0;
      const Tensor* w = FloatInit(g, conv.Input(1));
      if (!no_pad || w == nullptr || w->rank() < 3) continue;
      bool one_by_one = true;
      for (int d = 2; d < w->rank(); ++d) one_by_one &= w->dim(d) == 1;
      const int64_t c = static_cast<int64_t>(a->gamma_scale.size());
      if (!one_by_one || w->dim(1) != c) continue;
      const Tensor* b =
          conv.Input(2).empty() ? nullptr : FloatInit(g, conv.Input(2));
      if (!conv.Input(2).empty() && b == nullptr) continue;
      const int64_t m_out = w->dim(0);
      Tensor new_w = w->Clone();
      float* wd = new_w.mutable_data<float>();
      Tensor new_b(DType::kFloat, {m_out});
      float* bd = new_b.mutable_data<float>();
      for (int64_t m = 0; m < m_out; ++m) {
        float acc = b != nullptr ? b->data<float>()[m] : 0.f;
        for (int64_t ci = 0; ci < c; ++ci) {
          const float shift = a->beta[ci] - a->mean[ci] * a->gamma_scale[ci];
          acc += wd[m * c + ci] * shift;
          wd[m * c + ci] *= a->gamma_scale[ci];
        }
        bd[m] = acc;
      }
      const std::string x = bn.Input(0);
      SetNodeInitializer(&g, index, &conv, 1, std::move(new_w),
                         "_weight_bnfolded");
      SetNodeInitializer(&g, index, &conv, 2, std::move(new_b),
                         "_bias_bnfolded");
      conv.inputs[0] = x;
      g.value_info.erase(y);
      std::vector<bool> remove(g.nodes.size(), false);
      remove[n] = true;
      RemoveNodes(&g, remove);
      RemoveUnusedInitializers(&g);
      changed = true;
      break;
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
