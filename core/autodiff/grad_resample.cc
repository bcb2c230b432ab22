// Backward passes built on the executor's forward ops:
// - Resize is linear in its input: its gradient is the transpose of the
//   interpolation, from the executor's own taps (exec::ResizeAdjoint: every
//   mode, coordinate transformation and nearest mode the kernel
//   implements);
// - ConvTranspose is the adjoint of the Conv with its weights, strides,
//   dilations and groups and the padding the kernel resolves (pads,
//   auto_pad, output_padding, output_shape): its input gradient is that
//   Conv of the output gradient, its weight gradient that Conv's weight
//   gradient (any number of spatial axes), its bias gradient the output
//   gradient summed per channel.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/conv_backward.h"
#include "core/autodiff/op_gradient.h"
#include "core/autodiff/scratch.h"
#include "core/executor/executor.h"
#include "core/executor/kernels/conv_transpose.h"
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

// dy[..., lo:hi] on every spatial axis (rank 2 + lo.size()).
Tensor CropSpatial(const Tensor& dy, const std::vector<int64_t>& lo,
                   const std::vector<int64_t>& hi) {
  std::vector<int64_t> shape = {dy.dim(0), dy.dim(1)};
  for (size_t i = 0; i < lo.size(); ++i) shape.push_back(hi[i] - lo[i]);
  Tensor out = Tensor::Uninitialized(DType::kFloat, shape);
  const int rank = dy.rank();
  const int64_t row = shape[rank - 1];
  const float* src = dy.data<float>();
  float* dst = out.mutable_data<float>();
  // Every row of the cropped tensor (all axes but the last), in order.
  std::vector<int64_t> idx(rank - 1, 0);
  const int64_t rows = row > 0 ? out.num_elements() / row : 0;
  for (int64_t k = 0; k < rows; ++k, dst += row) {
    int64_t offset = 0;
    for (int a = 0; a < rank - 1; ++a) {
      const int64_t from = a >= 2 ? idx[a] + lo[a - 2] : idx[a];
      offset = offset * dy.dim(a) + from;
    }
    offset = offset * dy.dim(rank - 1) + lo.back();
    std::copy_n(src + offset, row, dst);
    for (int a = rank - 2; a >= 0 && ++idx[a] == shape[a]; --a) idx[a] = 0;
  }
  return out;
}

// The Conv whose adjoint the ConvTranspose is, mapping its output space to
// its input space with the same weights [C_in, C_out/G, KH, KW] read as a
// Conv's [M, C/G, KH, KW]: its strides, dilations and group, and as pads
// where the output lies in the un-cropped result s(in-1) + (k-1)d + 1, as
// the kernel resolves pads, auto_pad, output_padding and output_shape. Its
// input is dy cropped to that result: output padding, or an output_shape
// past the result, carries the bias alone. When the output and the result
// do not overlap on some axis (pads or an output padding past the whole
// result), no element of x or W reaches the output: `disjoint`, and their
// gradients are zero.
struct AdjointConv {
  Node conv;
  Tensor dy;
  bool disjoint = false;
};

absl::StatusOr<AdjointConv> AdjointConvOf(const OpGradContext& ctx,
                                          const Tensor& dy) {
  const Node& t = *ctx.node;
  auto axes = exec::ConvTransposeOutputAxes(t, ctx.inputs[0]->shape(),
                                            ctx.inputs[1]->shape());
  if (!axes.ok()) return NodeError(ctx, std::string(axes.status().message()));
  const int r = static_cast<int>(axes->full.size());
  if (dy.rank() != r + 2 ||
      !std::equal(axes->out.begin(), axes->out.end(), dy.shape().begin() + 2)) {
    return NodeError(ctx, absl::StrCat("output gradient ", dy.DebugString(),
                                       " does not match the output"));
  }
  AdjointConv a;
  a.conv.op_type = "Conv";
  a.conv.name = t.name;
  for (const char* attr : {"dilations", "group", "kernel_shape", "strides"}) {
    if (t.HasAttribute(attr)) a.conv.attributes[attr] = t.attributes.at(attr);
  }
  Attribute pads;
  pads.type = Attribute::Type::kInts;
  pads.ints.assign(2 * r, 0);
  std::vector<int64_t> lo(r), hi(r);
  bool crop = false;
  for (int i = 0; i < r; ++i) {
    const int64_t begin = axes->begin[i], out = axes->out[i];
    const int64_t end = axes->full[i] - begin - out;
    lo[i] = std::max<int64_t>(0, -begin);
    hi[i] = out - std::max<int64_t>(0, -end);
    if (hi[i] <= lo[i]) {
      a.disjoint = true;
      return a;
    }
    pads.ints[i] = std::max<int64_t>(0, begin);
    pads.ints[r + i] = std::max<int64_t>(0, end);
    crop = crop || lo[i] > 0 || hi[i] < out;
  }
  a.conv.attributes["pads"] = std::move(pads);
  a.dy = crop ? CropSpatial(dy, lo, hi) : dy;
  return a;
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
  if (ctx.inputs.size() < 2 || ctx.inputs[1] == nullptr) {
    return NodeError(ctx, "no weights");
  }
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[1], "weight W"));
  const Tensor dy = OutputGradOrZero(ctx, 0);
  ASSIGN_OR_RETURN(const AdjointConv adjoint, AdjointConvOf(ctx, dy));
  const Tensor& x = *ctx.inputs[0];
  if (adjoint.disjoint) {
    if (ctx.wants[0]) (*grads)[0] = Tensor(DType::kFloat, x.shape());
    if (want_w) (*grads)[1] = Tensor(DType::kFloat, ctx.inputs[1]->shape());
  } else if (ctx.wants[0]) {
    auto dx = RunAlone(adjoint.conv, ctx.opset, adjoint.dy, {ctx.inputs[1]});
    if (!dx.ok()) return NodeError(ctx, dx.status().ToString());
    if (dx->shape() != x.shape()) {
      return NodeError(ctx, "the adjoint Conv does not give the input's shape");
    }
    (*grads)[0] = *std::move(dx);
  }
  if (want_w && !adjoint.disjoint && x.rank() > 4) {
    // Three or more spatial axes: the adjoint Conv's own N-d backward, with
    // dy as its input and x as its output and output gradient.
    OpGradContext conv_ctx = ctx;
    conv_ctx.node = &adjoint.conv;
    conv_ctx.inputs = {&adjoint.dy, ctx.inputs[1]};
    conv_ctx.outputs = {&x};
    conv_ctx.output_grads = {&x};
    conv_ctx.wants = {false, true};
    std::vector<Tensor> conv_grads(2);
    RETURN_IF_ERROR(ConvBackwardNd(conv_ctx, &conv_grads));
    (*grads)[1] = std::move(conv_grads[1]);
  } else if (want_w && !adjoint.disjoint) {
    OpGradContext conv_ctx = ctx;
    conv_ctx.node = &adjoint.conv;
    const Tensor& w = *ctx.inputs[1];
    ASSIGN_OR_RETURN(const train::ConvGeometry g,
                     ConvGeometryOf(conv_ctx, adjoint.dy, w, nullptr));
    if (g.OutHeight() != (x.rank() == 4 ? x.dim(2) : 1) ||
        g.OutWidth() != x.dim(x.rank() - 1)) {
      return NodeError(ctx, "the adjoint Conv does not give the input's shape");
    }
    Tensor dw = Tensor::Uninitialized(DType::kFloat, w.shape());
    Scratch local;
    ConvBackwardDouble(g, adjoint.dy.data<float>(), w.data<float>(),
                       x.data<float>(), nullptr, dw.mutable_data<float>(),
                       nullptr, ctx.scratch != nullptr ? ctx.scratch : &local);
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
