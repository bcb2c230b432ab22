#include "core/pipeline/prep/channel_scaling.h"

namespace quantd {

bool IsLinear2d(const Node& n) {
  return n.op_type == "Conv" || n.op_type == "ConvTranspose";
}

Tensor* OwnFloatInit(Graph* g, const GraphIndex& index,
                     const std::string& name) {
  auto it = g->initializers.find(name);
  if (it == g->initializers.end() || it->second.dtype() != DType::kFloat ||
      index.NumUses(name) != 1) {
    return nullptr;
  }
  return &it->second;
}

bool IsZeroPad(const Graph& g, const Node& n) {
  if (n.op_type != "Pad") return false;
  auto mode = n.attributes.find("mode");
  if (mode != n.attributes.end() && mode->second.s != "constant") return false;
  auto value = n.attributes.find("value");  // opset < 11
  if (value != n.attributes.end() && value->second.f != 0.0f) return false;
  if (n.inputs.size() >= 3 && !n.inputs[2].empty()) {
    const Tensor* v = g.FindInitializer(n.inputs[2]);
    if (v == nullptr || v->num_elements() != 1) return false;
    auto f = v->CastToFloat();
    if (!f.ok() || f->data<float>()[0] != 0.0f) return false;
  }
  return true;
}

bool ScaleInputChannels(const Node& second, const std::vector<double>& s,
                        Tensor* w) {
  const int64_t c = static_cast<int64_t>(s.size());
  if (w->rank() < 3) return false;
  const int64_t group = second.GetInt("group", 1);
  auto d = w->mutable_span<float>();
  const int64_t d0 = w->dim(0), d1 = w->dim(1);
  const int64_t inner = w->num_elements() / (d0 * d1);
  if (second.op_type == "Conv") {
    if (group == 1 && d1 == c) {  // W [M, C, k...]
      for (int64_t m = 0; m < d0; ++m)
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t k = 0; k < inner; ++k)
            d[(m * d1 + ci) * inner + k] /= static_cast<float>(s[ci]);
      return true;
    }
    if (group == c && d0 == c && d1 == 1) {  // depthwise W [C, 1, k...]
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t k = 0; k < inner; ++k)
          d[ci * inner + k] /= static_cast<float>(s[ci]);
      return true;
    }
    return false;
  }
  if (group == 1 && d0 == c) {  // ConvTranspose W [C, M, k...]
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t k = 0; k < d1 * inner; ++k)
        d[ci * d1 * inner + k] /= static_cast<float>(s[ci]);
    return true;
  }
  return false;
}

}  // namespace quantd
