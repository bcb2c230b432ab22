// Backward passes built on the executor's forward ops:
// - Resize is linear in its input: its gradient is the transpose of the
//   interpolation, from the executor's own taps (exec::ResizeAdjoint: every
//   mode, coordinate transformation and nearest mode the kernel
//   implements);
// - ConvTranspose's input gradient is the Conv of the output gradient with
//   the same weights, strides, pads, dilations and groups (the op is that
//   Conv's adjoint). Its weight and bias gradients are not implemented.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/op_gradient.h"
#include "core/executor/executor.h"
#include "core/executor/kernels/resize.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

// Runs `node` alone: input 0 fed with `x`, inputs 1.. as the constants
// `others` (null: absent), output 0 returned.
absl::StatusOr<Tensor> RunAlone(const Node& node, int64_t opset,
                                const Tensor& x,
                                const std::vector<const Tensor*>& others) {
  auto model = std::make_shared<Model>();
  model->opset_import[""] = opset;
  Graph& g = model->graph;
  g.inputs.push_back({"x", x.dtype(), x.shape(),
                      std::vector<std::string>(x.shape().size()), true});
  Node n = node;
  n.inputs = {"x"};
  for (size_t k = 0; k < others.size(); ++k) {
    if (others[k] == nullptr) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = absl::StrCat("c", k + 1);
    g.initializers.emplace(name, *others[k]);
    n.inputs.push_back(name);
  }
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.outputs.push_back({"y", DType::kFloat, {}, {}, false});
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec,
                   Executor::Create(std::shared_ptr<const Model>(model)));
  ASSIGN_OR_RETURN(auto out, exec->Run({{"x", x}}));
  auto it = out.find("y");
  if (it == out.end()) return absl::InternalError("no output");
  return it->second;
}

}  // namespace

absl::Status ResizeBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  std::vector<const Tensor*> inputs(ctx.inputs.begin(), ctx.inputs.end());
  auto dx = exec::ResizeAdjoint(*ctx.node, ctx.opset, inputs,
                                OutputGradOrZero(ctx, 0));
  if (!dx.ok()) return NodeError(ctx, dx.status().ToString());
  (*grads)[0] = *std::move(dx);
  return absl::OkStatus();
}

absl::Status ConvTransposeBackward(const OpGradContext& ctx,
                                   std::vector<Tensor>* grads) {
  for (size_t k = 1; k < ctx.wants.size(); ++k) {
    if (ctx.wants[k]) {
      return NodeUnimplemented(ctx, "ConvTranspose weight or bias gradient");
    }
  }
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Node& t = *ctx.node;
  if (t.GetString("auto_pad", "NOTSET") != "NOTSET" ||
      t.HasAttribute("output_shape")) {
    return NodeUnimplemented(ctx,
                             "ConvTranspose with auto_pad or output_shape");
  }
  if (ctx.inputs.size() < 2 || ctx.inputs[1] == nullptr) {
    return NodeError(ctx, "no weights");
  }
  Node conv;
  conv.op_type = "Conv";
  conv.name = t.name;
  for (const char* a :
       {"dilations", "group", "kernel_shape", "pads", "strides"}) {
    if (t.HasAttribute(a)) conv.attributes[a] = t.attributes.at(a);
  }
  auto dx =
      RunAlone(conv, ctx.opset, OutputGradOrZero(ctx, 0), {ctx.inputs[1]});
  if (!dx.ok()) return NodeError(ctx, dx.status().ToString());
  if (dx->shape() != ctx.inputs[0]->shape()) {
    return NodeError(ctx, "the adjoint Conv does not give the input's shape");
  }
  (*grads)[0] = *std::move(dx);
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
