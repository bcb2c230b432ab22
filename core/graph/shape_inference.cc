#include "core/graph/shape_inference.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/constant_eval.h"
#include "core/graph/graph_edit.h"
#include "core/graph/internal/shape_rules.h"
#include "core/graph/mctq_ops.h"
#include "core/graph/onnx_import.h"
#include "core/graph/validation.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

using shape_internal::FindShapeRule;
using shape_internal::RuleContext;

// Names visible while inferring one graph (outer scopes copied in).
struct Env {
  std::map<std::string, ValueInfo> types;
  std::map<std::string, Tensor> constants;
};

std::string Str(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

ValueInfo InfoOf(const std::string& name, const Tensor& t, DType dtype) {
  ValueInfo v;
  v.name = name;
  v.dtype = dtype;
  v.shape = t.shape();
  v.dim_params.assign(v.shape.size(), "");
  v.has_shape = true;
  return v;
}

bool IsStatic(const ValueInfo& v) {
  if (!v.has_shape) return false;
  for (int64_t d : v.shape) {
    if (d < 0) return false;
  }
  return true;
}

// Combines a declared type with an inferred one. Conflicting static dims
// are an error; otherwise the more specific information wins.
absl::StatusOr<ValueInfo> Merge(const ValueInfo& declared,
                                const ValueInfo& inferred,
                                const std::string& what) {
  ValueInfo out = inferred;
  out.name = declared.name;
  if (out.dtype == DType::kUndefined) out.dtype = declared.dtype;
  if (declared.dtype != DType::kUndefined &&
      inferred.dtype != DType::kUndefined && declared.dtype != inferred.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": inferred type ", DTypeName(inferred.dtype),
                     " differs from the declared ", DTypeName(declared.dtype)));
  }
  if (!declared.has_shape) {
    out.dim_params.assign(out.shape.size(), "");
    return out;
  }
  if (!inferred.has_shape) {
    out.has_shape = true;
    out.shape = declared.shape;
    out.dim_params = declared.dim_params;
    return out;
  }
  if (declared.shape.size() != inferred.shape.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": inferred shape ", Str(inferred.shape),
                     " differs from the declared ", Str(declared.shape)));
  }
  out.dim_params.assign(out.shape.size(), "");
  for (size_t i = 0; i < out.shape.size(); ++i) {
    const int64_t d = declared.shape[i], e = inferred.shape[i];
    if (d >= 0 && e >= 0 && d != e) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": inferred shape ", Str(inferred.shape),
                       " differs from the declared ", Str(declared.shape)));
    }
    if (e < 0) {
      out.shape[i] = d;
      if (i < declared.dim_params.size()) {
        out.dim_params[i] = declared.dim_params[i];
      }
    }
  }
  return out;
}

class Inferencer {
 public:
  Inferencer(int64_t opset, const ShapeInferenceOptions& options,
             ShapeInferenceResult* result)
      : opset_(opset), options_(options), result_(result) {}

  // Infers `graph` in `env` (which already holds outer names and the graph
  // inputs); returns the output types.
  absl::StatusOr<std::vector<ValueInfo>> InferGraph(Graph* graph, Env env,
                                                    bool top_level) {
    for (const auto& [name, t] : graph->initializers) {
      auto it = graph->sub_byte_types.find(name);
      env.types[name] = InfoOf(
          name, t, it == graph->sub_byte_types.end() ? t.dtype() : it->second);
      env.constants[name] = t;
    }
    for (const ValueInfo& in : graph->inputs) {
      env.types[in.name] = in;
      if (!top_level) continue;
      auto v = options_.input_values.find(in.name);
      if (v == options_.input_values.end()) continue;
      if (in.has_shape && in.shape != v->second.shape()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", in.name, "': value of shape ", v->second.DebugString(),
            " differs from the input's shape ", Str(in.shape)));
      }
      env.constants[in.name] = v->second;
      env.types[in.name] = InfoOf(in.name, v->second, v->second.dtype());
    }
    std::map<std::string, ValueInfo> declared = std::move(graph->value_info);
    graph->value_info.clear();
    for (Node& node : graph->nodes) {
      // Bodies get their value_info filled in: never in a Model we share
      // them with.
      for (auto& [key, attr] : node.attributes) {
        if (attr.g) MutableSubgraph(&attr);
      }
      RETURN_IF_ERROR(InferNode(node, &env, top_level));
      for (const std::string& out : node.outputs) {
        if (out.empty()) continue;
        ValueInfo info = env.types[out];
        auto d = declared.find(out);
        if (d != declared.end()) {
          auto merged = Merge(d->second, info, node.Label());
          // A stale hint never wins over what the graph computes.
          if (merged.ok()) info = *std::move(merged);
        }
        info.name = out;
        if (info.dim_params.size() != info.shape.size()) {
          info.dim_params.assign(info.shape.size(), "");
        }
        env.types[out] = info;
        graph->value_info[out] = std::move(info);
      }
    }
    std::vector<ValueInfo> outputs;
    for (ValueInfo& out : graph->outputs) {
      auto it = env.types.find(out.name);
      if (it != env.types.end()) {
        ASSIGN_OR_RETURN(out,
                         Merge(out, it->second,
                               absl::StrCat("graph output '", out.name, "'")));
      }
      outputs.push_back(out);
    }
    if (top_level) {
      for (auto& [name, t] : env.constants) {
        if (graph->initializers.count(name) == 0) {
          result_->constants[name] = t;
        }
      }
    }
    return outputs;
  }

 private:
  absl::Status InferNode(const Node& node, Env* env, bool top_level) {
    if (IsMctqQuantizerOp(node.domain, node.op_type)) {
      // Fake quantizers: output 0 has the type and shape of input 0.
      if (!node.outputs.empty() && !node.outputs[0].empty()) {
        ValueInfo info{node.outputs[0]};
        auto it = env->types.find(node.Input(0));
        if (it != env->types.end()) {
          RETURN_IF_ERROR(CheckRank(node, node.outputs[0], it->second.shape));
          info = it->second;
          info.name = node.outputs[0];
          info.dim_params.assign(info.shape.size(), "");
        }
        env->types[node.outputs[0]] = std::move(info);
      }
      return absl::OkStatus();
    }
    if (!IsDefaultDomain(node.domain)) {
      return absl::UnimplementedError(absl::StrCat(
          node.Label(), ": domain '", node.domain, "' is not supported"));
    }
    RuleContext c;
    c.node = &node;
    c.opset = opset_;
    c.max_rank = options_.max_rank;
    bool all_constant = true;
    for (const std::string& in : node.inputs) {
      const ValueInfo* info = nullptr;
      const Tensor* value = nullptr;
      if (!in.empty()) {
        auto it = env->types.find(in);
        if (it != env->types.end()) info = &it->second;
        auto ct = env->constants.find(in);
        if (ct != env->constants.end()) value = &ct->second;
        if (value == nullptr) all_constant = false;
      }
      c.inputs.push_back(info);
      c.constants.push_back(value);
    }
    c.outputs.resize(node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      c.outputs[i].name = node.outputs[i];
    }

    // Shape computations: evaluate when the inputs are known.
    if ((node.op_type == "Shape" || node.op_type == "Size") &&
        !node.inputs.empty() && !node.outputs.empty() &&
        c.inputs[0] != nullptr && IsStatic(*c.inputs[0]) &&
        IsDefaultDomain(node.domain)) {
      const std::vector<int64_t>& s = c.inputs[0]->shape;
      Tensor value;
      if (node.op_type == "Size") {
        value = Tensor::FromVector<int64_t>({NumElements(s)}, {});
      } else {
        const int64_t r = static_cast<int64_t>(s.size());
        int64_t start = node.GetInt("start", 0), end = node.GetInt("end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = std::clamp<int64_t>(start, 0, r);
        end = std::clamp<int64_t>(end, 0, r);
        std::vector<int64_t> dims(s.begin() + start,
                                  s.begin() + std::max(start, end));
        value = Tensor::FromVector<int64_t>(
            dims, {static_cast<int64_t>(dims.size())});
      }
      SetConstant(node.outputs[0], value, env);
      return absl::OkStatus();
    }
    if (all_constant && !node.inputs.empty() && CanEvaluate(node) &&
        node.op_type != "Shape" && node.op_type != "Size") {
      // Within what the total budget has left: evaluating a value that
      // would not be kept is wasted work.
      auto values = EvaluateNode(
          node, c.constants, opset_,
          std::min(options_.max_constant_elements,
                   options_.max_total_constant_elements - tracked_elements_));
      if (values.ok()) {
        for (size_t i = 0; i < values->size() && i < node.outputs.size(); ++i) {
          if (node.outputs[i].empty()) continue;
          RETURN_IF_ERROR(
              CheckRank(node, node.outputs[i], (*values)[i].shape()));
          SetConstant(node.outputs[i], (*values)[i], env);
        }
        return absl::OkStatus();
      }
      // Too large or an unsupported dtype: fall back to the shape rule.
      const auto code = values.status().code();
      if (code != absl::StatusCode::kResourceExhausted &&
          code != absl::StatusCode::kUnimplemented) {
        return values.status();
      }
    }

    const auto* rule = FindShapeRule(node.op_type);
    if (rule == nullptr) {
      if (options_.strict) {
        return absl::UnimplementedError(absl::StrCat(
            node.Label(), ": no shape inference for op ", node.op_type));
      }
      if (top_level) result_->unsupported.push_back(node.Label());
      for (const std::string& out : node.outputs) {
        if (!out.empty()) env->types[out] = ValueInfo{out};
      }
      return absl::OkStatus();
    }
    c.infer_subgraph = [&](Graph* g, const std::vector<ValueInfo>& inputs)
        -> absl::StatusOr<std::vector<ValueInfo>> {
      Env sub = *env;
      for (size_t k = 0; k < g->inputs.size(); ++k) {
        ValueInfo& declared = g->inputs[k];
        if (k < inputs.size() && inputs[k].dtype != DType::kUndefined) {
          auto merged = Merge(
              declared, inputs[k],
              absl::StrCat(node.Label(), ": body input '", declared.name, "'"));
          if (merged.ok()) declared = *std::move(merged);
        }
        sub.constants.erase(declared.name);
      }
      auto outs = InferGraph(g, std::move(sub), false);
      if (!outs.ok()) {
        return absl::Status(outs.status().code(),
                            absl::StrCat(node.Label(), ": subgraph: ",
                                         outs.status().message()));
      }
      return outs;
    };
    RETURN_IF_ERROR((*rule)(&c));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      RETURN_IF_ERROR(CheckRank(node, node.outputs[i], c.outputs[i].shape));
      ValueInfo info = std::move(c.outputs[i]);
      info.name = node.outputs[i];
      info.dim_params.assign(info.shape.size(), "");
      env->types[node.outputs[i]] = std::move(info);
    }
    return absl::OkStatus();
  }

  absl::Status CheckRank(const Node& node, const std::string& output,
                         const std::vector<int64_t>& shape) const {
    return shape_internal::CheckOutputRank(
        node, output, static_cast<int64_t>(shape.size()), options_.max_rank);
  }

  // Past the total budget a computed value keeps its type only.
  void SetConstant(const std::string& name, const Tensor& value, Env* env) {
    env->types[name] = InfoOf(name, value, value.dtype());
    const int64_t n = value.num_elements();
    if (n > options_.max_total_constant_elements - tracked_elements_) return;
    tracked_elements_ += n;
    env->constants[name] = value;
  }

  int64_t opset_;
  const ShapeInferenceOptions& options_;
  ShapeInferenceResult* result_;
  int64_t tracked_elements_ = 0;
};

}  // namespace

void ClearInferredShapes(Graph* graph) {
  graph->value_info.clear();
  for (Node& node : graph->nodes) {
    for (auto& [key, attr] : node.attributes) {
      if (attr.g) ClearInferredShapes(MutableSubgraph(&attr));
    }
  }
}

bool HasShapeRule(const std::string& op_type) {
  return FindShapeRule(op_type) != nullptr;
}

absl::StatusOr<ShapeInferenceResult> InferShapes(
    Model* model, const ShapeInferenceOptions& options) {
  if (!options.input_shapes.empty()) {
    RETURN_IF_ERROR(BindInputShapes(options.input_shapes, &model->graph));
  }
  ShapeInferenceResult result;
  Inferencer inferencer(model->DefaultOpset(), options, &result);
  ASSIGN_OR_RETURN(std::vector<ValueInfo> outputs,
                   inferencer.InferGraph(&model->graph, Env(), true));
  (void)outputs;
  return result;
}

}  // namespace quantd
