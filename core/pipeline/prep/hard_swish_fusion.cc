// Decomposed hard-swish -> one HardSwish node (graph preparation).
//
// Exporters below opset 14 write hard-swish as elementwise pieces:
//   Paddle:  Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)      (or Mul by 1/6)
//            Mul(x, Div(Clip(Add(x, 3), 0, 6), 6))
//   others:  Mul(x, HardSigmoid(x, alpha=1/6, beta=0.5))
// MCT sees hard-swish as one layer (torch nn.Hardswish, Keras hard_swish):
// one quantized output, fused with the Conv before it by the TPC's fusing
// patterns, and a candidate for shift-negative correction. Left decomposed,
// the same function gets four extra 8-bit quantizers (the conv output, the
// Add, the Clip and the Mul), which is where most of the error of a
// MobileNetV3 came from. The model moves to opset 14, where HardSwish exists.
#include "core/pipeline/prep/hard_swish_fusion.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/opset_upgrade.h"
#include "core/graph/transforms.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

std::optional<double> ScalarConstant(const Graph& g, const std::string& name) {
  const Tensor* t = g.FindInitializer(name);
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  auto f = t->CastToFloat();
  if (!f.ok()) return std::nullopt;
  return static_cast<double>(f->data<float>()[0]);
}

bool Near(std::optional<double> v, double want) {
  return v.has_value() && std::fabs(*v - want) <= 1e-5 * std::max(1.0, want);
}

struct Match {
  std::vector<int> nodes;  // the pieces; the last one produces y
  std::string x;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), index_(g) {}

  // Producer of `t` if it is a node of the main graph whose only use is
  // inside the pattern (one consumer, not a graph output).
  int Inner(const std::string& t) const {
    if (index_.NumUses(t) != 1) return -1;
    return index_.Producer(t);
  }

  // `t` = Clip(Add(x, 3), 0, 6): the Add and Clip node indices.
  bool IsRelu6OfXPlus3(const std::string& t, const std::string& x,
                       std::vector<int>* nodes) const {
    const int clip = Inner(t);
    if (clip < 0 || g_.nodes[clip].op_type != "Clip") return false;
    const Node& c = g_.nodes[clip];
    if (!Near(ScalarConstant(g_, c.Input(1)), 0.0) ||
        !Near(ScalarConstant(g_, c.Input(2)), 6.0)) {
      return false;
    }
    const int add = Inner(c.Input(0));
    if (add < 0 || g_.nodes[add].op_type != "Add") return false;
    const Node& a = g_.nodes[add];
    const bool ok =
        (a.Input(0) == x && Near(ScalarConstant(g_, a.Input(1)), 3)) ||
        (a.Input(1) == x && Near(ScalarConstant(g_, a.Input(0)), 3));
    if (!ok) return false;
    nodes->push_back(add);
    nodes->push_back(clip);
    return true;
  }

  // Node `n` divides its activation input by 6 (Div by 6 or Mul by 1/6);
  // returns that input or "".
  std::string DividedBySix(int n) const {
    const Node& d = g_.nodes[n];
    if (d.op_type == "Div" && Near(ScalarConstant(g_, d.Input(1)), 6.0)) {
      return d.Input(0);
    }
    if (d.op_type == "Mul") {
      for (int k = 0; k < 2; ++k) {
        if (Near(ScalarConstant(g_, d.Input(1 - k)), 1.0 / 6.0)) {
          return d.Input(k);
        }
      }
    }
    return "";
  }

  // `t` = relu6(x + 3) / 6 or HardSigmoid(x, 1/6, 0.5).
  bool IsHardSigmoidOfX(const std::string& t, const std::string& x,
                        std::vector<int>* nodes) const {
    const int p = Inner(t);
    if (p < 0) return false;
    const Node& n = g_.nodes[p];
    if (n.op_type == "HardSigmoid") {
      if (n.Input(0) != x || !Near(n.GetFloat("alpha", 0.2f), 1.0 / 6.0) ||
          !Near(n.GetFloat("beta", 0.5f), 0.5)) {
        return false;
      }
      nodes->push_back(p);
      return true;
    }
    const std::string in = DividedBySix(p);
    if (in.empty() || !IsRelu6OfXPlus3(in, x, nodes)) return false;
    nodes->push_back(p);
    return true;
  }

  // Hard-swish ending at node `end`, if any.
  std::optional<Match> At(int end) const {
    const Node& n = g_.nodes[end];
    if (n.op_type != "Mul" && n.op_type != "Div") return std::nullopt;
    // x * hard_sigmoid(x)
    if (n.op_type == "Mul" && n.inputs.size() == 2) {
      for (int k = 0; k < 2; ++k) {
        const std::string& x = n.Input(k);
        if (x.empty() || g_.IsConstant(x)) continue;
        Match m;
        m.x = x;
        if (IsHardSigmoidOfX(n.Input(1 - k), x, &m.nodes)) {
          m.nodes.push_back(end);
          return m;
        }
      }
    }
    // (x * relu6(x + 3)) / 6
    const std::string prod = DividedBySix(end);
    if (prod.empty()) return std::nullopt;
    const int mul = Inner(prod);
    if (mul < 0 || g_.nodes[mul].op_type != "Mul") return std::nullopt;
    const Node& mn = g_.nodes[mul];
    for (int k = 0; k < 2; ++k) {
      const std::string& x = mn.Input(k);
      if (x.empty() || g_.IsConstant(x)) continue;
      Match m;
      m.x = x;
      if (IsRelu6OfXPlus3(mn.Input(1 - k), x, &m.nodes)) {
        m.nodes.push_back(mul);
        m.nodes.push_back(end);
        return m;
      }
    }
    return std::nullopt;
  }

 private:
  const Graph& g_;
  GraphIndex index_;
};

std::vector<Match> FindAll(const Graph& g) {
  Matcher matcher(g);
  std::vector<Match> out;
  std::vector<bool> used(g.nodes.size(), false);
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    std::optional<Match> m = matcher.At(i);
    if (!m) continue;
    bool overlap = false;
    for (int k : m->nodes) overlap = overlap || used[k];
    if (overlap) continue;
    for (int k : m->nodes) used[k] = true;
    out.push_back(*std::move(m));
  }
  return out;
}

}  // namespace

absl::StatusOr<int> FuseHardSwish(Model* model) {
  if (FindAll(model->graph).empty()) return 0;
  if (model->DefaultOpset() < 14) RETURN_IF_ERROR(UpgradeOpset(model, 14));
  Graph& g = model->graph;
  const std::vector<Match> matches = FindAll(g);
  std::vector<bool> remove(g.nodes.size(), false);
  for (const Match& m : matches) {
    Node& last = g.nodes[m.nodes.back()];
    Node hs;
    hs.op_type = "HardSwish";
    hs.name = last.name;
    hs.inputs = {m.x};
    hs.outputs = {last.outputs[0]};
    last = std::move(hs);
    for (size_t k = 0; k + 1 < m.nodes.size(); ++k) remove[m.nodes[k]] = true;
  }
  RemoveNodes(&g, remove);
  return static_cast<int>(matches.size());
}

}  // namespace quantd
