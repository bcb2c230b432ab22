#include "tests/e2e_ptq/qdq_layerwise.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/qdq/qdq_math.h"
#include "core/util/status_macros.h"
#include "onnx/onnx_pb.h"

namespace quantd {
namespace {

absl::StatusOr<onnx::ModelProto> Parse(const std::string& bytes) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("QDQ model: not an ONNX ModelProto");
  }
  return m;
}

// ORT's integers for one tensor of one sample, as int64.
absl::StatusOr<std::vector<int64_t>> Integers(const Tensor& t) {
  ASSIGN_OR_RETURN(Tensor f, t.CastToFloat());  // exact up to 24 bits
  std::vector<int64_t> out(f.num_elements());
  auto s = f.span<float>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(s[i]);
  return out;
}

// Compares quantd's integers for `values` with ORT's, then overwrites
// `values` with ORT's dequantized integers.
absl::Status CompareAndForce(const std::string& tensor, const QdqActivation& a,
                             const Tensor& ort, absl::Span<float> values,
                             LayerwiseComparison* c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> q_ort, Integers(ort));
  if (q_ort.size() != values.size()) {
    return absl::InternalError(absl::StrCat(tensor, ": ORT has ", q_ort.size(),
                                            " integers, quantd ", values.size(),
                                            " values"));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t ours = QuantizeValue(values[i], a.scale, a.zero_point,
                                       a.storage.qmin, a.storage.qmax);
    const int64_t d = std::llabs(ours - q_ort[i]);
    ++c->elements;
    c->one_step += d == 1;
    c->beyond_one += d > 1;
    if (d > c->worst_steps) {
      c->worst_steps = d;
      c->worst_tensor = tensor;
    }
    values[i] = DequantizeValue(q_ort[i], a.scale, a.zero_point);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> QuantizedTensorNames(
    const std::string& qdq_onnx, const QdqPlan& plan) {
  ASSIGN_OR_RETURN(onnx::ModelProto m, Parse(qdq_onnx));
  // The exporter names the one QuantizeLinear of tensor T "T_QuantizeLinear"
  // (its input is T, T's float copy when T is a graph output, or a Clip).
  std::map<std::string, std::string> by_source;
  for (const auto& n : m.graph().node()) {
    constexpr absl::string_view kSuffix = "_QuantizeLinear";
    if (n.op_type() != "QuantizeLinear" || n.output_size() < 1 ||
        !absl::EndsWith(n.name(), kSuffix)) {
      continue;
    }
    by_source[n.name().substr(0, n.name().size() - kSuffix.size())] =
        n.output(0);
  }
  std::map<std::string, std::string> names;
  for (const QdqActivation& a : plan.activations) {
    auto it = by_source.find(a.tensor);
    if (it == by_source.end()) {
      return absl::NotFoundError(
          absl::StrCat("planned activation '", a.tensor,
                       "' has no QuantizeLinear in the QDQ model"));
    }
    names[a.tensor] = it->second;
  }
  return names;
}

absl::StatusOr<std::string> WithQuantizedOutputs(
    const std::string& qdq_onnx,
    const std::map<std::string, std::string>& names) {
  ASSIGN_OR_RETURN(onnx::ModelProto m, Parse(qdq_onnx));
  m.mutable_graph()->clear_output();
  for (const auto& [tensor, quantized] : names) {
    m.mutable_graph()->add_output()->set_name(quantized);
  }
  return m.SerializeAsString();
}

absl::StatusOr<LayerwiseComparison> CompareLayerwise(
    const Model& fq_model, const QdqPlan& plan,
    const std::map<std::string, std::string>& quantized_names,
    const SampleSet& inputs, const SampleSet& ort_quantized) {
  std::map<std::string, const QdqActivation*> planned;
  for (const QdqActivation& a : plan.activations) planned[a.tensor] = &a;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                   Executor::Create(fq_model));
  LayerwiseComparison c;
  absl::Status failure;
  for (size_t s = 0; s < inputs.size(); ++s) {
    const auto& ort = ort_quantized.samples.at(s);
    auto ort_of = [&](const std::string& tensor) -> const Tensor* {
      auto it = ort.find(quantized_names.at(tensor));
      return it == ort.end() ? nullptr : &it->second;
    };
    std::map<std::string, Tensor> feeds = inputs.samples[s];
    for (auto& [name, value] : feeds) {
      auto p = planned.find(name);
      if (p == planned.end() || value.dtype() != DType::kFloat) continue;
      const Tensor* q = ort_of(name);
      if (q == nullptr) return absl::NotFoundError("ORT output for " + name);
      RETURN_IF_ERROR(CompareAndForce(name, *p->second, *q,
                                      value.mutable_span<float>(), &c));
    }
    TensorRewriter force = [&](const Node& node, int index, Tensor* value) {
      const std::string& name = node.outputs[index];
      auto p = planned.find(name);
      if (p == planned.end() || value->dtype() != DType::kFloat ||
          !failure.ok()) {
        return;
      }
      const Tensor* q = ort_of(name);
      if (q == nullptr) {
        failure = absl::NotFoundError("ORT output for " + name);
        return;
      }
      failure = CompareAndForce(name, *p->second, *q,
                                value->mutable_span<float>(), &c);
    };
    RunOptions options;
    options.rewriter = &force;
    ASSIGN_OR_RETURN(auto out, executor->Run(feeds, options));
    RETURN_IF_ERROR(failure);
  }
  return c;
}

}  // namespace quantd
