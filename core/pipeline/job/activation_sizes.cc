#include "core/pipeline/job/activation_sizes.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/graph/shape_inference.h"
#include "core/pipeline/evaluation/paired_models.h"

namespace quantd {

bool InferSampleShapes(const std::vector<SampleFeeds>& calibration,
                       Model* model) {
  ShapeInferenceOptions shape_options;
  if (!calibration.empty()) {
    for (const auto& [name, t] : calibration[0]) {
      shape_options.input_shapes[name] = t.shape();
    }
  }
  if (InferShapes(model, shape_options).ok()) return true;
  shape_options.input_shapes.clear();  // fall back to the declared shapes
  return InferShapes(model, shape_options).ok();
}

ActivationSizes ActivationBytesPerSample(
    const Model& model, bool shapes_inferred,
    const std::vector<SampleFeeds>& calibration) {
  if (!shapes_inferred) return {};
  int64_t largest_input = 0;
  if (!calibration.empty()) {
    for (const auto& [name, t] : calibration[0]) {
      largest_input =
          std::max<int64_t>(largest_input, static_cast<int64_t>(t.byte_size()));
    }
  }
  const Graph& g = model.graph;
  constexpr int64_t kCap = int64_t{1} << 50;
  auto bytes_of = [&](const ValueInfo& info) {
    int64_t n = 1;
    for (int64_t d : info.shape) {
      if (d < 0) return largest_input;
      n = (d > 0 && n > kCap / d) ? kCap : n * d;
    }
    if (!info.has_shape) return largest_input;
    const int64_t size = static_cast<int64_t>(DTypeSize(info.dtype));
    return std::min(kCap, n) * (size > 0 ? size : 4);
  };
  ActivationSizes sizes;
  std::map<std::string, int64_t> bytes;
  for (const auto& [name, info] : g.value_info) {
    if (g.IsConstant(name)) continue;
    bytes[name] = bytes_of(info);
    sizes.total = std::min(kCap, sizes.total + bytes[name]);
  }
  // The live set, node by node.
  const int64_t end = static_cast<int64_t>(g.nodes.size());
  std::map<std::string, int64_t> last_read;
  for (int64_t i = 0; i < end; ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      if (bytes.count(in)) last_read[in] = i;
    }
  }
  for (const ValueInfo& v : g.outputs) last_read[v.name] = end;
  int64_t live = 0;
  for (const ValueInfo& v : g.inputs) {
    auto it = bytes.find(v.name);
    if (it != bytes.end()) live = std::min(kCap, live + it->second);
  }
  sizes.live = live;
  for (int64_t i = 0; i < end; ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      auto it = bytes.find(out);
      if (it != bytes.end()) live = std::min(kCap, live + it->second);
    }
    sizes.live = std::max(sizes.live, live);
    for (const std::string& name : g.nodes[i].inputs) {
      auto it = last_read.find(name);
      if (it == last_read.end() || it->second != i) continue;
      live -= bytes[name];
      last_read.erase(it);  // a node reading a tensor twice releases it once
    }
    for (const std::string& out : g.nodes[i].outputs) {
      if (bytes.count(out) && !last_read.count(out)) live -= bytes[out];
    }
  }
  // The report runs the two models apart: the float run's values are all
  // held until the fake-quant run reaches them.
  if (!PairedModels::CanPair(g)) sizes.live = sizes.total;
  return sizes;
}

}  // namespace quantd
