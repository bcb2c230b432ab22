// Backward passes built on the executor's forward ops:
// - Resize is linear in its input: its gradient is the transpose of the
//   interpolation, from the executor's own taps (exec::ResizeAdjoint: every
//   mode, coordinate transformation and nearest mode the kernel
//   implements);
// - ConvTranspose is the adjoint of the Conv with its weights, strides,
//   pads, dilations and groups: its input gradient is that Conv of the
//   output gradient, its weight gradient that Conv's weight gradient (1-D
//   and 2-D), its bias gradient the output gradient summed per channel.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/conv_backward.h"
#include "core/autodiff/op_gradient.h"
#include "core/autodiff/scratch.h"
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

namespace {

// The Conv whose adjoint the ConvTranspose is: it maps the ConvTranspose's
// output space (input: dy) to its input space, with the same weights
// [C_in, C_out/G, KH, KW] read as a Conv's [M, C/G, KH, KW].
absl::StatusOr<train::ConvGeometry> AdjointConvGeometry(
    const OpGradContext& ctx, const Tensor& dy) {
  const Tensor& x = *ctx.inputs[0];
  ASSIGN_OR_RETURN(train::ConvGeometry g,
                   ConvGeometryOf(ctx, dy, *ctx.inputs[1], nullptr));
  if (g.OutHeight() != (x.rank() == 4 ? x.dim(2) : 1) ||
      g.OutWidth() != x.dim(x.rank() - 1)) {
    return NodeError(ctx, "the adjoint Conv does not give the input's shape");
  }
  return g;
}

}  // namespace

// dx is the adjoint Conv of dy. The weight gradient of <ConvT_W x, dy> =
// <x, Conv_W dy> is the adjoint Conv's weight gradient with dy as its input
// and x as its output's gradient; the bias gradient sums dy per channel.
absl::Status ConvTransposeBackward(const OpGradContext& ctx,
                                   std::vector<Tensor>* grads) {
  const bool want_w = ctx.wants.size() > 1 && ctx.wants[1];
  const bool want_b = ctx.wants.size() > 2 && ctx.wants[2] &&
                      ctx.inputs.size() > 2 && ctx.inputs[2] != nullptr;
  if (!ctx.wants[0] && !want_w && !want_b) return absl::OkStatus();
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
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[1], "weight W"));
  const Tensor dy = OutputGradOrZero(ctx, 0);
  if (ctx.wants[0]) {
    Node conv;
    conv.op_type = "Conv";
    conv.name = t.name;
    for (const char* a :
         {"dilations", "group", "kernel_shape", "pads", "strides"}) {
      if (t.HasAttribute(a)) conv.attributes[a] = t.attributes.at(a);
    }
    auto dx = RunAlone(conv, ctx.opset, dy, {ctx.inputs[1]});
    if (!dx.ok()) return NodeError(ctx, dx.status().ToString());
    if (dx->shape() != ctx.inputs[0]->shape()) {
      return NodeError(ctx, "the adjoint Conv does not give the input's shape");
    }
    (*grads)[0] = *std::move(dx);
  }
  if (want_w) {
    ASSIGN_OR_RETURN(const train::ConvGeometry g, AdjointConvGeometry(ctx, dy));
    const Tensor& w = *ctx.inputs[1];
    Tensor dw = Tensor::Uninitialized(DType::kFloat, w.shape());
    Scratch local;
    ConvBackwardDouble(g, dy.data<float>(), w.data<float>(),
                       ctx.inputs[0]->data<float>(), nullptr,
                       dw.mutable_data<float>(), nullptr,
                       ctx.scratch != nullptr ? ctx.scratch : &local);
    (*grads)[1] = std::move(dw);
  }
  if (want_b) {
    const Tensor& b = *ctx.inputs[2];
    const int64_t channels = dy.rank() >= 2 ? dy.dim(1) : 0;
    if (b.num_elements() != channels) {
      return NodeError(ctx, absl::StrCat("bias ", b.DebugString(), " for ",
                                         channels, " output channels"));
    }
    const int64_t batch = dy.dim(0);
    const int64_t plane =
        batch > 0 && channels > 0 ? dy.num_elements() / batch / channels : 0;
    std::vector<double> sums(channels, 0.0);
    const float* g = dy.data<float>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        const float* p = g + (n * channels + c) * plane;
        for (int64_t i = 0; i < plane; ++i) sums[c] += p[i];
      }
    }
    Tensor db(DType::kFloat, b.shape());
    std::copy(sums.begin(), sums.end(), db.mutable_data<float>());
    (*grads)[2] = std::move(db);
  }
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
