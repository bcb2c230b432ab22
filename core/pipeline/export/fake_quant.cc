#include "core/pipeline/export/fake_quant.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/constant_eval.h"
#include "core/qdq/qdq_math.h"
#include "core/util/status_macros.h"

namespace quantd {
absl::StatusOr<Tensor> DequantizeWeight(const QdqWeight& w) {
  absl::StatusOr<std::vector<int64_t>> ints = ToInt64Vector(w.int_values);
  if (!ints.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "integer weight values have dtype ", DTypeName(w.int_values.dtype())));
  }
  const std::vector<int64_t>& q = *ints;
  const auto& shape = w.int_values.shape();
  int64_t inner = 1, channels = 1;
  if (w.axis >= 0) {
    if (w.axis >= static_cast<int>(shape.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight axis ", w.axis, " out of rank ", shape.size()));
    }
    channels = shape[w.axis];
    for (size_t d = w.axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  if (static_cast<int64_t>(w.scales.size()) != channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight has ", w.scales.size(), " scales, expected ", channels));
  }
  Tensor out(DType::kFloat, shape);
  float* o = out.mutable_data<float>();
  const int64_t codes = static_cast<int64_t>(w.codebook.size());
  RETURN_IF_ERROR(ForEachChannelRun(
      static_cast<int64_t>(q.size()), channels, inner,
      [&](int64_t c, int64_t begin, int64_t end) -> absl::Status {
        if (codes > 0) {
          for (int64_t i = begin; i < end; ++i) {
            if (q[i] < 0 || q[i] >= codes) {
              return absl::InvalidArgumentError(
                  absl::StrCat("LUT index ", q[i], " out of the codebook"));
            }
            o[i] = w.codebook[q[i]] * w.scales[c];
          }
          return absl::OkStatus();
        }
        const int64_t zp = w.zero_points.empty() ? 0 : w.zero_points[c];
        for (int64_t i = begin; i < end; ++i) {
          o[i] = DequantizeValue(q[i], w.scales[c], zp);
        }
        return absl::OkStatus();
      }));
  return out;
}

absl::StatusOr<Model> WithFakeQuantWeights(const Model& model,
                                           const QdqPlan& plan) {
  Model out = model;
  std::map<std::string, int> node_index;
  for (size_t i = 0; i < out.graph.nodes.size(); ++i) {
    node_index[out.graph.nodes[i].name] = static_cast<int>(i);
  }
  for (const QdqWeight& w : plan.weights) {
    auto it = node_index.find(w.node);
    if (it == node_index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight of unknown node '", w.node, "'"));
    }
    Node& n = out.graph.nodes[it->second];
    if (w.input_index < 0 ||
        w.input_index >= static_cast<int>(n.inputs.size()) ||
        !out.graph.IsConstant(n.inputs[w.input_index])) {
      return absl::InvalidArgumentError(absl::StrCat(
          n.Label(), ": input ", w.input_index, " is not a constant"));
    }
    ASSIGN_OR_RETURN(Tensor deq, DequantizeWeight(w));
    // A private initializer per (node, input): never alter a shared one.
    std::string name = absl::StrCat(n.inputs[w.input_index], "__fq_", n.name,
                                    "_", w.input_index);
    out.graph.initializers[name] = std::move(deq);
    n.inputs[w.input_index] = name;
  }
  return out;
}

ActivationFakeQuantizer::ActivationFakeQuantizer(const QdqPlan& plan) {
  for (const auto& a : plan.activations) by_tensor_[a.tensor] = a;
  rewriter_ = [this](const Node& node, int output_index, Tensor* value) {
    auto it = by_tensor_.find(node.outputs[output_index]);
    if (it == by_tensor_.end() || value->dtype() != DType::kFloat) return;
    const QdqActivation& a = it->second;
    FakeQuantizeInPlace(value->mutable_span<float>(), a.scale, a.zero_point,
                        a.storage);
  };
}

std::map<std::string, Tensor> ActivationFakeQuantizer::FakeQuantizeFeeds(
    const std::map<std::string, Tensor>& feeds) const {
  std::map<std::string, Tensor> out = feeds;
  for (auto& [name, t] : out) {
    auto it = by_tensor_.find(name);
    if (it == by_tensor_.end() || t.dtype() != DType::kFloat) continue;
    Tensor copy = t.Clone();
    FakeQuantizeInPlace(copy.mutable_span<float>(), it->second.scale,
                        it->second.zero_point, it->second.storage);
    t = std::move(copy);
  }
  return out;
}

}  // namespace quantd
