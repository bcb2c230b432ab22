#include "core/autodiff/gradient_graph.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/autodiff/op_gradient.h"
#include "core/graph/validation.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff {
namespace {

using internal::FindOpGradient;
using internal::OpGradContext;
using internal::OpGradient;

void Accumulate(Tensor g, const std::string& name,
                std::map<std::string, Tensor>* grads) {
  auto it = grads->find(name);
  if (it == grads->end()) {
    grads->emplace(name, std::move(g));
    return;
  }
  float* dst = it->second.mutable_data<float>();
  const float* src = g.data<float>();
  for (int64_t i = 0; i < g.num_elements(); ++i) dst[i] += src[i];
}

}  // namespace

absl::Status GradientGraph::Plan(const Graph& g,
                                 const GradientOptions& options) {
  input_gradients_ = options.input_gradients;
  tensor_gradients_ = options.tensor_gradients;
  if (options.input_gradients) {
    for (const ValueInfo& in : g.inputs) differentiable_.insert(in.name);
  }
  for (const std::string& name : options.initializers) {
    const Tensor* t = g.FindInitializer(name);
    if (t == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("initializer '", name, "' not found in the graph"));
    }
    if (t->dtype() != DType::kFloat) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initializer '", name, "' is ", t->DebugString(), ", not float"));
    }
    differentiable_.insert(name);
    wrt_initializers_.push_back(name);
  }
  std::set<std::string> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    bool any = false;
    for (const std::string& in : n.inputs) {
      any |= !in.empty() && differentiable_.count(in) > 0;
    }
    if (!any || (IsDefaultDomain(n.domain) &&
                 internal::IsNonDifferentiableOp(n.op_type))) {
      continue;
    }
    const OpGradient* op =
        IsDefaultDomain(n.domain) ? FindOpGradient(n.op_type) : nullptr;
    if (op == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(n.Label(), ": no gradient for op ", n.op_type,
                       " on the path from the inputs; differentiable ops: ",
                       absl::StrJoin(internal::DifferentiableOps(), ", ")));
    }
    bool diff_input = false;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const bool in_range = op->differentiable_inputs < 0 ||
                            static_cast<int>(k) < op->differentiable_inputs;
      diff_input |= in_range && !n.inputs[k].empty() &&
                    differentiable_.count(n.inputs[k]) > 0;
    }
    if (!diff_input) continue;  // e.g. only a Reshape's shape depends on x
    if (!n.outputs.empty() && !n.outputs[0].empty()) {
      differentiable_.insert(n.outputs[0]);
    }
    backward_nodes_.push_back(static_cast<int>(i));
    for (const std::string& in : n.inputs) {
      if (!in.empty() && g.FindInitializer(in) == nullptr) kept.insert(in);
    }
    if (!n.outputs.empty() && !n.outputs[0].empty()) kept.insert(n.outputs[0]);
  }
  for (const ValueInfo& in : g.inputs) kept.erase(in.name);
  extra_outputs_.assign(kept.begin(), kept.end());
  return absl::OkStatus();
}

absl::Status GradientGraph::CheckPath(const Model& model,
                                      const GradientOptions& options) {
  GradientGraph plan;
  return plan.Plan(model.graph, options);
}

absl::StatusOr<std::unique_ptr<GradientGraph>> GradientGraph::Create(
    std::shared_ptr<const Model> model, const GradientOptions& options) {
  std::unique_ptr<GradientGraph> self(new GradientGraph());
  RETURN_IF_ERROR(self->Plan(model->graph, options));
  self->model_ = std::move(model);
  ASSIGN_OR_RETURN(self->executor_,
                   Executor::Create(self->model_, options.executor));
  return self;
}

absl::StatusOr<Tape> GradientGraph::Forward(
    const std::map<std::string, Tensor>& feeds,
    const CancellationToken* cancel) const {
  RunOptions run;
  run.cancel = cancel;
  run.extra_outputs = extra_outputs_;
  Tape tape;
  ASSIGN_OR_RETURN(tape.values, executor_->Run(feeds, run));
  for (const auto& [name, t] : feeds) tape.values[name] = t;
  return tape;
}

absl::StatusOr<Gradients> GradientGraph::Backward(
    const Tape& tape, const std::map<std::string, Tensor>& seeds,
    const CancellationToken* cancel, Scratch* scratch,
    const GradientObserver* observer) const {
  const Graph& g = model_->graph;
  auto value = [&](const std::string& name) -> const Tensor* {
    if (name.empty()) return nullptr;
    auto it = tape.values.find(name);
    if (it != tape.values.end()) return &it->second;
    return g.FindInitializer(name);
  };
  std::map<std::string, Tensor> grads;
  for (const auto& [name, seed] : seeds) {
    const Tensor* v = value(name);
    if (!IsDifferentiable(name) || v == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "seed '", name, "' is not a tensor on the gradient path"));
    }
    if (seed.dtype() != DType::kFloat || seed.shape() != v->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("seed '", name, "' is ", seed.DebugString(),
                       ", the tensor is ", v->DebugString()));
    }
    Accumulate(seed.Clone(), name, &grads);
  }
  // With an observer: the requested tensors not delivered yet, and what
  // must stay until the end (the returned inputs and initializers).
  std::set<std::string> to_observe, returned;
  if (observer != nullptr) {
    to_observe.insert(tensor_gradients_.begin(), tensor_gradients_.end());
    if (input_gradients_) {
      for (const ValueInfo& in : g.inputs) returned.insert(in.name);
    }
    returned.insert(wrt_initializers_.begin(), wrt_initializers_.end());
  }
  const auto deliver = [&](const std::string& name) {
    if (to_observe.erase(name) == 0) return;
    auto git = grads.find(name);
    if (git != grads.end()) {
      (*observer)(name, git->second);
    } else if (const Tensor* v = value(name)) {
      (*observer)(name, Tensor(DType::kFloat, v->shape()));
    }
  };
  const int64_t opset = model_->DefaultOpset();
  for (auto it = backward_nodes_.rbegin(); it != backward_nodes_.rend(); ++it) {
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    const Node& n = g.nodes[*it];
    if (observer != nullptr) {
      for (const std::string& out : n.outputs) deliver(out);
    }
    OpGradContext ctx;
    ctx.node = &n;
    ctx.opset = opset;
    ctx.scratch = scratch;
    bool any_grad = false;
    for (const std::string& out : n.outputs) {
      auto git = out.empty() ? grads.end() : grads.find(out);
      ctx.output_grads.push_back(git == grads.end() ? nullptr : &git->second);
      any_grad |= git != grads.end();
      ctx.outputs.push_back(value(out));
    }
    if (!any_grad) continue;
    if (ctx.outputs[0] == nullptr) {
      return absl::InternalError(
          absl::StrCat(n.Label(), ": output missing from the tape"));
    }
    const OpGradient* op = FindOpGradient(n.op_type);
    bool wanted = false;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ctx.inputs.push_back(value(n.inputs[k]));
      const bool in_range = op->differentiable_inputs < 0 ||
                            static_cast<int>(k) < op->differentiable_inputs;
      ctx.wants.push_back(in_range && ctx.inputs.back() != nullptr &&
                          IsDifferentiable(n.inputs[k]));
      wanted |= ctx.wants.back();
    }
    if (!wanted) continue;
    std::vector<Tensor> in_grads(n.inputs.size());
    RETURN_IF_ERROR(op->backward(ctx, &in_grads));
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (!ctx.wants[k]) continue;
      if (!in_grads[k].defined() ||
          in_grads[k].shape() != ctx.inputs[k]->shape()) {
        return absl::InternalError(absl::StrCat(
            n.Label(), ": backward gave no gradient of input ", k));
      }
      Accumulate(std::move(in_grads[k]), n.inputs[k], &grads);
    }
    if (observer != nullptr) {
      for (const std::string& out : n.outputs) {
        if (!returned.count(out)) grads.erase(out);
      }
    }
  }
  if (observer != nullptr) {
    const std::set<std::string> rest = to_observe;
    for (const std::string& name : rest) deliver(name);
  }
  Gradients out;
  auto take = [&](const std::string& name, std::map<std::string, Tensor>* to) {
    auto git = grads.find(name);
    const Tensor* v = value(name);
    if (git != grads.end()) {
      (*to)[name] = std::move(git->second);
    } else if (v != nullptr) {
      (*to)[name] = Tensor(DType::kFloat, v->shape());
    }
  };
  if (observer == nullptr) {
    // Copies (sharing the buffers): a requested tensor may be an input.
    for (const std::string& name : tensor_gradients_) {
      auto git = grads.find(name);
      const Tensor* v = value(name);
      if (git != grads.end()) {
        out.tensors[name] = git->second;
      } else if (v != nullptr) {
        out.tensors[name] = Tensor(DType::kFloat, v->shape());
      }
    }
  }
  if (input_gradients_) {
    for (const ValueInfo& in : g.inputs) take(in.name, &out.inputs);
  }
  for (const std::string& name : wrt_initializers_) {
    take(name, &out.initializers);
  }

  return out;
}

}  // namespace quantd::autodiff
