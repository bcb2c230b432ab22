#include "core/pipeline/prep/data_channel_equalization.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/graph/free_names.h"
#include "core/graph/graph_index.h"
#include "core/pipeline/prep/channel_scaling.h"

namespace quantd {
namespace {

// Where a site's channels get s: a layer's output channels (and bias), or
// the scalar constants of Mul(Y, a) [-> Add(., b)].
struct SiteProducer {
  int conv = -1;                     // Conv or ConvTranspose
  std::string mul_const, add_const;  // affine producer
};

// A float initializer read by one node only.
const Tensor* OwnFloat(const Graph& g, const GraphIndex& index,
                       const std::string& name) {
  const Tensor* t = g.FindInitializer(name);
  return t != nullptr && t->dtype() == DType::kFloat && index.NumUses(name) == 1
             ? t
             : nullptr;
}

bool IsScalar(const Tensor* t) {
  return t != nullptr && t->num_elements() == 1;
}

// The other input of a two-input node whose input `k` is a scalar
// initializer read by it alone; "" when neither is.
std::string ScalarOperand(const Graph& g, const GraphIndex& index,
                          const Node& n, std::string* constant) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return "";
  for (int k = 0; k < 2; ++k) {
    if (IsScalar(OwnFloat(g, index, n.inputs[k])) &&
        n.inputs[1 - k] != n.inputs[k]) {
      *constant = n.inputs[k];
      return n.inputs[1 - k];
    }
  }
  return "";
}

// f(s x) = s f(x) channel by channel for s > 0: a per-channel scale passes
// through these unchanged (Resize and the pools are linear per channel).
bool PassesChannelScale(const Graph& g, const Node& n) {
  static const std::set<std::string> kOps = {
      "Relu",        "LeakyRelu",         "MaxPool",
      "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      "Resize"};
  return n.outputs.size() == 1 && (kOps.count(n.op_type) || IsZeroPad(g, n));
}

// The weights of a layer whose output channels can all be scaled: a Conv
// (any group) or a group-1 ConvTranspose, with its own weight and bias.
bool ScalesOutputChannels(const Graph& g, const GraphIndex& index,
                          const Node& n, int64_t channels) {
  if (!IsLinear2d(n) || n.outputs.size() != 1) return false;
  const Tensor* w = OwnFloat(g, index, n.Input(1));
  if (w == nullptr || w->rank() < 3) return false;
  const bool conv = n.op_type == "Conv";
  if (!conv && n.GetInt("group", 1) != 1) return false;
  if ((conv ? w->dim(0) : w->dim(1)) != channels) return false;
  const std::string& bias = n.Input(2);
  if (bias.empty()) return true;
  const Tensor* b = OwnFloat(g, index, bias);
  return b != nullptr && b->num_elements() == channels;
}

// The producer of `x` that can scale its channels exactly, if any, walking
// back through PassesChannelScale ops whose data input nothing else reads
// (those tensors are scaled too).
bool FindProducer(const Graph& g, const GraphIndex& index,
                  const std::set<std::string>& implicit, const std::string& x,
                  int64_t channels, SiteProducer* out) {
  int p = index.Producer(x);
  while (p >= 0 && PassesChannelScale(g, g.nodes[p])) {
    const std::string& in = g.nodes[p].Input(0);
    if (in.empty() || index.NumUses(in) != 1 || implicit.count(in)) {
      return false;
    }
    p = index.Producer(in);
  }
  if (p < 0) return false;
  const Node& n = g.nodes[p];
  if (ScalesOutputChannels(g, index, n, channels)) {
    out->conv = p;
    return true;
  }
  int mul = p;
  if (n.op_type == "Add") {
    const std::string y = ScalarOperand(g, index, n, &out->add_const);
    mul = index.Producer(y);
    if (y.empty() || mul < 0 || index.NumUses(y) != 1) return false;
  }
  if (g.nodes[mul].op_type != "Mul") return false;
  return !ScalarOperand(g, index, g.nodes[mul], &out->mul_const).empty();
}

// Every reader of `x` takes it as its data input only and can divide its
// input channels; their common channel count, else 0.
int64_t ReaderChannels(const Graph& g, const GraphIndex& index,
                       const std::string& x) {
  const std::vector<int>& readers = index.Consumers(x);
  if (readers.empty()) return 0;
  int64_t channels = 0;
  for (int r : readers) {
    const Node& n = g.nodes[r];
    if (!IsLinear2d(n) || n.inputs.empty() || n.inputs[0] != x) return 0;
    for (size_t k = 1; k < n.inputs.size(); ++k) {
      if (n.inputs[k] == x) return 0;
    }
    const Tensor* w = OwnFloat(g, index, n.Input(1));
    if (w == nullptr || w->rank() < 3) return 0;
    const int64_t group = n.GetInt("group", 1);
    int64_t c = 0;
    if (n.op_type == "ConvTranspose") {
      c = group == 1 ? w->dim(0) : 0;
    } else if (group == 1) {
      c = w->dim(1);
    } else if (group == w->dim(0) && w->dim(1) == 1) {
      c = w->dim(0);  // depthwise
    }
    if (c <= 1 || (channels != 0 && c != channels)) return 0;
    channels = c;
  }
  return channels;
}

// Multiplies index i of `axis` by s[i] (a Conv weight's rows: axis 0; a
// ConvTranspose's output channels: axis 1; a bias: axis 0).
void ScaleAxis(const std::vector<double>& s, int axis, Tensor* t) {
  auto d = t->mutable_span<float>();
  const int64_t c = static_cast<int64_t>(s.size());
  const int64_t outer = axis == 0 ? 1 : t->dim(0);
  const int64_t inner = t->num_elements() / (outer * c);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < c; ++i) {
      float* row = d.data() + (o * c + i) * inner;
      for (int64_t k = 0; k < inner; ++k) {
        row[k] = static_cast<float>(row[k] * s[i]);
      }
    }
  }
}

// a * s as a [C, 1, ..., 1] constant broadcasting over a rank-`rank` input.
Tensor PerChannel(const Tensor& a, const std::vector<double>& s, int64_t rank) {
  std::vector<int64_t> shape(std::max<int64_t>(rank - 1, 1), 1);
  shape[0] = static_cast<int64_t>(s.size());
  Tensor t(DType::kFloat, shape);
  const double v = a.data<float>()[0];
  auto d = t.mutable_span<float>();
  for (size_t c = 0; c < s.size(); ++c) d[c] = static_cast<float>(v * s[c]);
  return t;
}

struct Site {
  EqualizationSite site;
  SiteProducer producer;
};

std::vector<Site> FindSites(const Graph& g) {
  const GraphIndex index(g);
  std::set<std::string> implicit;  // read by If/Loop/Scan bodies
  for (const Node& n : g.nodes) {
    for (std::string& name : ImplicitInputs(n)) implicit.insert(name);
  }
  std::vector<Site> sites;
  std::set<std::string> seen;
  for (const Node& n : g.nodes) {
    if (!IsLinear2d(n) || n.inputs.empty()) continue;
    const std::string& x = n.inputs[0];
    if (!seen.insert(x).second || index.IsGraphOutput(x) || implicit.count(x)) {
      continue;
    }
    Site s;
    s.site.tensor = x;
    s.site.channels = ReaderChannels(g, index, x);
    if (s.site.channels == 0 ||
        !FindProducer(g, index, implicit, x, s.site.channels, &s.producer) ||
        implicit.count(s.producer.mul_const) ||
        implicit.count(s.producer.add_const)) {
      continue;
    }
    sites.push_back(std::move(s));
  }
  return sites;
}

}  // namespace

std::vector<EqualizationSite> FindEqualizationSites(const Model& model) {
  std::vector<EqualizationSite> out;
  for (Site& s : FindSites(model.graph)) out.push_back(std::move(s.site));
  return out;
}

std::vector<double> EqualizationScales(const std::vector<double>& channel_max,
                                       double alpha, double max_scale) {
  double top = 0;
  for (double m : channel_max) {
    if (std::isfinite(m)) top = std::max(top, m);
  }
  std::vector<double> s(channel_max.size(), 1.0);
  if (!(top > 0)) return s;
  for (size_t c = 0; c < s.size(); ++c) {
    const double m = channel_max[c];
    if (std::isfinite(m) && m > 0) {
      s[c] = std::min(std::pow(top / m, alpha), max_scale);
    }
  }
  return s;
}

absl::StatusOr<int> ApplyChannelEqualization(
    const std::map<std::string, std::vector<double>>& scales, Model* model) {
  Graph& g = model->graph;
  const std::vector<Site> sites = FindSites(g);
  const GraphIndex index(g);
  int changed = 0;
  for (const Site& site : sites) {
    auto it = scales.find(site.site.tensor);
    if (it == scales.end()) continue;
    const std::vector<double>& s = it->second;
    if (static_cast<int64_t>(s.size()) != site.site.channels ||
        std::all_of(s.begin(), s.end(), [](double v) { return v == 1.0; })) {
      continue;
    }
    // ReaderChannels checked every reader's layout.
    int64_t rank = 0;
    for (int r : index.Consumers(site.site.tensor)) {
      const Node& reader = g.nodes[r];
      Tensor* w = &g.initializers.at(reader.inputs[1]);
      rank = w->rank();
      Tensor scaled = w->Clone();
      if (!ScaleInputChannels(reader, s, &scaled)) {
        return absl::InternalError(
            absl::StrCat(reader.Label(), ": input channels cannot be scaled"));
      }
      *w = std::move(scaled);
    }
    const SiteProducer& p = site.producer;
    if (p.conv >= 0) {
      const Node& layer = g.nodes[p.conv];
      ScaleAxis(s, layer.op_type == "Conv" ? 0 : 1,
                &g.initializers.at(layer.inputs[1]));
      if (!layer.Input(2).empty()) {
        ScaleAxis(s, 0, &g.initializers.at(layer.Input(2)));
      }
    } else {
      Tensor& a = g.initializers.at(p.mul_const);
      a = PerChannel(a, s, rank);
      if (!p.add_const.empty()) {
        Tensor& b = g.initializers.at(p.add_const);
        b = PerChannel(b, s, rank);
      }
    }
    ++changed;
  }
  return changed;
}

}  // namespace quantd
