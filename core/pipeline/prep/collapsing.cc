// MCT's linear collapsing and residual collapsing (mct-reference §1.3).
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/transforms.h"
#include "core/pipeline/prep/graph_prep.h"

namespace quantd {
namespace {

bool AllEqual(const std::vector<int64_t>& v, int64_t value) {
  for (int64_t x : v) {
    if (x != value) return false;
  }
  return true;
}

// A float initializer input, or null.
const Tensor* FloatConst(const Graph& g, const std::string& name) {
  const Tensor* t = g.FindInitializer(name);
  return t != nullptr && t->dtype() == DType::kFloat ? t : nullptr;
}

bool PlainConv(const Node& n, const Graph& g) {
  if (n.op_type != "Conv" || n.GetInt("group", 1) != 1) return false;
  if (!AllEqual(n.GetInts("strides"), 1)) return false;
  if (!AllEqual(n.GetInts("dilations"), 1)) return false;
  const Tensor* w = FloatConst(g, n.Input(1));
  if (w == nullptr || w->rank() != 4) return false;
  if (!n.Input(2).empty() && FloatConst(g, n.Input(2)) == nullptr) {
    return false;
  }
  return true;
}

bool ZeroPads(const Node& n) {
  const std::string pad = n.GetString("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" &&
      pad != "SAME_LOWER") {
    return false;
  }
  return AllEqual(n.GetInts("pads"), 0);
}

std::vector<float> BiasOf(const Graph& g, const Node& n, int64_t m) {
  std::vector<float> b(m, 0.0f);
  if (const Tensor* t = FloatConst(g, n.Input(2))) {
    for (int64_t i = 0; i < m && i < t->num_elements(); ++i) {
      b[i] = t->data<float>()[i];
    }
  }
  return b;
}

}  // namespace

absl::StatusOr<int> CollapseLinear(Model* model) {
  Graph& g = model->graph;
  int collapsed = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    GraphIndex index(g);
    for (size_t i = 0; i < g.nodes.size() && !changed; ++i) {
      Node& first = g.nodes[i];
      if (!PlainConv(first, g) || first.outputs.size() != 1) continue;
      const int c = index.SoleConsumer(static_cast<int>(i));
      if (c < 0) continue;
      Node& second = g.nodes[c];
      if (!PlainConv(second, g) || second.Input(0) != first.outputs[0] ||
          !ZeroPads(second)) {
        continue;
      }
      const Tensor& w1 = *g.FindInitializer(first.Input(1));
      const Tensor& w2 = *g.FindInitializer(second.Input(1));
      // W1 [M, C, kh, kw], W2 [O, M, 1, 1].
      if (w2.dim(2) != 1 || w2.dim(3) != 1 || w2.dim(1) != w1.dim(0)) continue;
      const int64_t m = w1.dim(0), ci = w1.dim(1), kh = w1.dim(2),
                    kw = w1.dim(3), o = w2.dim(0);
      // MCT collapses only when the merged kernel is not larger.
      if (o * ci * kh * kw > m * ci * kh * kw + o * m) continue;
      const float* a = w1.data<float>();
      const float* b = w2.data<float>();
      Tensor w(DType::kFloat, {o, ci, kh, kw});
      float* out = w.mutable_data<float>();
      const int64_t k = ci * kh * kw;
      for (int64_t oo = 0; oo < o; ++oo) {
        for (int64_t j = 0; j < k; ++j) {
          double s = 0;
          for (int64_t mm = 0; mm < m; ++mm) {
            s += static_cast<double>(b[oo * m + mm]) * a[mm * k + j];
          }
          out[oo * k + j] = static_cast<float>(s);
        }
      }
      std::vector<float> b1 = BiasOf(g, first, m), b2 = BiasOf(g, second, o);
      Tensor bias(DType::kFloat, {o});
      for (int64_t oo = 0; oo < o; ++oo) {
        double s = b2[oo];
        for (int64_t mm = 0; mm < m; ++mm) {
          s += static_cast<double>(b[oo * m + mm]) * b1[mm];
        }
        bias.mutable_data<float>()[oo] = static_cast<float>(s);
      }
      const std::string wname =
          UniqueTensorName(g, absl::StrCat(second.name, "_collapsed_weight"));
      g.initializers[wname] = std::move(w);
      const std::string bname =
          UniqueTensorName(g, absl::StrCat(second.name, "_collapsed_bias"));
      g.initializers[bname] = std::move(bias);
      // The second conv takes the first's input, kernel shape and padding.
      Node merged = first;
      merged.name = second.name;
      merged.outputs = second.outputs;
      merged.inputs = {first.Input(0), wname, bname};
      g.nodes[c] = std::move(merged);
      std::vector<bool> remove(g.nodes.size(), false);
      remove[i] = true;
      RemoveNodes(&g, remove);
      ++collapsed;
      changed = true;
    }
  }
  RemoveUnusedInitializers(&g);
  return collapsed;
}

absl::StatusOr<int> CollapseResidual(Model* model) {
  Graph& g = model->graph;
  int collapsed = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    GraphIndex index(g);
    for (size_t i = 0; i < g.nodes.size() && !changed; ++i) {
      Node& add = g.nodes[i];
      if (add.op_type != "Add" || add.inputs.size() != 2) continue;
      for (int side = 0; side < 2 && !changed; ++side) {
        const int p = index.Producer(add.inputs[side]);
        if (p < 0) continue;
        Node& conv = g.nodes[p];
        const std::string& other = add.inputs[1 - side];
        if (!PlainConv(conv, g) || conv.Input(0) != other ||
            index.SoleConsumer(p) != static_cast<int>(i)) {
          continue;
        }
        const Tensor& w = *g.FindInitializer(conv.Input(1));
        const int64_t o = w.dim(0), ci = w.dim(1), kh = w.dim(2), kw = w.dim(3);
        // Same channels, odd kernel, "same" padding: out[:, c] lines up with
        // x[:, c], so x = Conv with a centred identity kernel.
        if (o != ci || kh % 2 == 0 || kw % 2 == 0) continue;
        const std::vector<int64_t> pads = conv.GetInts("pads", {0, 0, 0, 0});
        const std::string auto_pad = conv.GetString("auto_pad", "NOTSET");
        const bool same_pads = pads.size() == 4 && pads[0] == kh / 2 &&
                               pads[2] == kh / 2 && pads[1] == kw / 2 &&
                               pads[3] == kw / 2;
        const bool same_auto =
            (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER");
        if (!(auto_pad == "NOTSET" ? same_pads : same_auto)) continue;
        Tensor nw = w.Clone();
        float* d = nw.mutable_data<float>();
        for (int64_t c = 0; c < o; ++c) {
          d[((c * ci + c) * kh + kh / 2) * kw + kw / 2] += 1.0f;
        }
        const std::string wname =
            UniqueTensorName(g, absl::StrCat(conv.name, "_residual_weight"));
        g.initializers[wname] = std::move(nw);
        Node merged = conv;
        merged.inputs[1] = wname;
        merged.outputs = add.outputs;
        merged.name = add.name;
        g.nodes[i] = std::move(merged);
        std::vector<bool> remove(g.nodes.size(), false);
        remove[p] = true;
        RemoveNodes(&g, remove);
        ++collapsed;
        changed = true;
      }
    }
  }
  RemoveUnusedInitializers(&g);
  return collapsed;
}

}  // namespace quantd
