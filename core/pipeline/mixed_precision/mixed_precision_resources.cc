#include "core/pipeline/mixed_precision/mixed_precision_resources.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace quantd {
namespace {

// MCT's FLOAT_BITWIDTH: what a float operand costs in BOPs.
constexpr int kFloatBits = 32;

double Elements(const std::map<std::string, std::vector<int64_t>>& shapes,
                const std::string& name) {
  auto it = shapes.find(name);
  if (it == shapes.end()) return 0;
  const int64_t n = NumElements(it->second);
  return n < 0 ? 0 : static_cast<double>(n);
}

// Multiply-accumulates of one kernel node (0 if it is none or unknown).
double Macs(const Node& node, const Graph& g,
            const std::map<std::string, std::vector<int64_t>>& shapes) {
  if (node.outputs.empty()) return 0;
  const Tensor* w = g.FindInitializer(node.Input(1));
  if (w == nullptr || w->rank() < 2 || w->dim(0) <= 0) return 0;
  const double out = Elements(shapes, node.outputs[0]);
  const double per_out_channel =
      static_cast<double>(w->num_elements()) / w->dim(0);
  if (node.op_type == "Conv") {
    // Every output element takes W's C/g * k... products.
    return out * per_out_channel;
  }
  if (node.op_type == "ConvTranspose") {
    // Every input element is scattered through M/g * k... products.
    return Elements(shapes, node.Input(0)) * per_out_channel;
  }
  if (node.op_type == "Gemm") {
    const int64_t k = node.GetInt("transB", 0) ? w->dim(1) : w->dim(0);
    return out * k;
  }
  if (node.op_type == "MatMul") return out * w->dim(w->rank() - 2);
  return 0;
}

// Drops duplicate cuts and cuts contained in another one.
std::vector<std::vector<int>> MaximalCuts(std::vector<std::vector<int>> cuts) {
  std::sort(cuts.begin(), cuts.end(),
            [](const std::vector<int>& a, const std::vector<int>& b) {
              return a.size() != b.size() ? a.size() > b.size() : a < b;
            });
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<std::vector<int>> kept;
  for (const auto& c : cuts) {
    if (c.empty()) continue;
    bool contained = false;
    for (const auto& k : kept) {
      if (std::includes(k.begin(), k.end(), c.begin(), c.end())) {
        contained = true;
        break;
      }
    }
    if (!contained) kept.push_back(c);
  }
  return kept;
}

}  // namespace

ResourceLayout BuildResourceLayout(
    const Model& model,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const std::vector<std::string>& activation_tensors,
    const std::vector<WeightRef>& weights) {
  const Graph& g = model.graph;
  ResourceLayout layout;
  std::map<std::string, int> act_index;
  for (const std::string& t : activation_tensors) {
    if (act_index.count(t)) continue;
    act_index[t] = static_cast<int>(layout.activations.size());
    layout.activations.push_back({t, Elements(shapes, t)});
  }
  std::map<std::pair<int, int>, int> weight_index;
  for (const WeightRef& r : weights) {
    if (r.node < 0 || r.node >= static_cast<int>(g.nodes.size())) continue;
    const Tensor* t = g.FindInitializer(g.nodes[r.node].Input(r.input_index));
    if (t == nullptr) continue;
    ResourceLayout::Weight w;
    w.ref = r;
    w.elements = static_cast<double>(t->num_elements());
    if (r.channel_axis >= 0 && r.channel_axis < t->rank()) {
      w.channels = std::max<int64_t>(1, t->dim(r.channel_axis));
    }
    weight_index[{r.node, r.input_index}] =
        static_cast<int>(layout.weights.size());
    layout.weights.push_back(w);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    const bool linear = node.op_type == "Conv" ||
                        node.op_type == "ConvTranspose" ||
                        node.op_type == "Gemm" || node.op_type == "MatMul";
    if (!linear) continue;
    const double macs = Macs(node, g, shapes);
    if (macs <= 0) continue;
    ResourceLayout::Mac m;
    m.node = static_cast<int>(i);
    m.macs = macs;
    auto w = weight_index.find({static_cast<int>(i), 1});
    if (w != weight_index.end()) m.weight = w->second;
    auto a = act_index.find(node.Input(0));
    if (a != act_index.end()) m.activation = a->second;
    layout.macs.push_back(m);
  }
  // Liveness over the topological schedule.
  const int n = static_cast<int>(g.nodes.size());
  std::map<std::string, int> last_use;
  for (int i = 0; i < n; ++i) {
    for (const auto& in : g.nodes[i].inputs) {
      if (!in.empty()) last_use[in] = i;
    }
  }
  for (const auto& out : g.outputs) last_use[out.name] = n;
  std::set<std::string> live;
  for (const auto& in : g.inputs) live.insert(in.name);
  std::vector<std::vector<int>> cuts;
  for (int i = 0; i < n; ++i) {
    for (const auto& out : g.nodes[i].outputs) {
      if (!out.empty()) live.insert(out);
    }
    std::vector<int> cut;
    for (const auto& t : live) {
      auto it = act_index.find(t);
      if (it != act_index.end()) cut.push_back(it->second);
    }
    std::sort(cut.begin(), cut.end());
    cuts.push_back(std::move(cut));
    for (auto it = live.begin(); it != live.end();) {
      auto lu = last_use.find(*it);
      if (lu == last_use.end() || lu->second <= i) {
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  layout.cuts = MaximalCuts(std::move(cuts));
  return layout;
}

double PaddedElements(const ResourceLayout::Weight& w, int simd) {
  if (simd <= 1 || w.channels <= 0) return w.elements;
  const double per_channel = w.elements / static_cast<double>(w.channels);
  const int64_t padded = (w.channels + simd - 1) / simd * simd;
  return per_channel * static_cast<double>(padded);
}

ResourceBreakdown EvaluateResources(const ResourceLayout& layout,
                                    const ResourceBits& bits) {
  ResourceBreakdown r;
  auto weight_bits = [&](int i) {
    return i < static_cast<int>(bits.weight_bits.size()) ? bits.weight_bits[i]
                                                         : 0;
  };
  auto act_bits = [&](int i) {
    return i < static_cast<int>(bits.activation_bits.size())
               ? bits.activation_bits[i]
               : 0;
  };
  for (size_t i = 0; i < layout.weights.size(); ++i) {
    const int simd = i < bits.weight_simd.size() ? bits.weight_simd[i] : 0;
    r.weights += PaddedElements(layout.weights[i], simd) *
                 weight_bits(static_cast<int>(i)) / 8.0;
  }
  r.cut_activation.reserve(layout.cuts.size());
  for (const auto& cut : layout.cuts) {
    double sum = 0;
    for (int a : cut) sum += layout.activations[a].elements * act_bits(a) / 8.0;
    r.cut_activation.push_back(sum);
    r.activation = std::max(r.activation, sum);
  }
  r.total = r.weights + r.activation;
  for (const auto& m : layout.macs) {
    const int wb = m.weight >= 0 && weight_bits(m.weight) > 0
                       ? weight_bits(m.weight)
                       : kFloatBits;
    const int ab = m.activation >= 0 && act_bits(m.activation) > 0
                       ? act_bits(m.activation)
                       : kFloatBits;
    r.bops += m.macs * wb * ab;
  }
  return r;
}

}  // namespace quantd
