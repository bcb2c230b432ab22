// Per-operator backward passes of the autodiff library (internal to
// core/autodiff; GradientGraph is the public entry point).
//
// A backward pass gets the node, its forward inputs and outputs (as the
// executor computed them) and d(loss)/d(output) for each output (null when no
// gradient reached that output: zero), and fills d(loss)/d(input k) for every
// input k the caller wants. Gradients are float tensors of the value's shape.
#ifndef QUANTD_CORE_AUTODIFF_OP_GRADIENT_H_
#define QUANTD_CORE_AUTODIFF_OP_GRADIENT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/autodiff/scratch.h"
#include "core/executor/window.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/train/conv2d.h"

namespace quantd::autodiff::internal {

struct OpGradContext {
  const Node* node = nullptr;
  int64_t opset = 0;
  std::vector<const Tensor*> inputs;        // null: absent optional input
  std::vector<const Tensor*> outputs;       // forward values
  std::vector<const Tensor*> output_grads;  // null: zero
  std::vector<bool> wants;                  // per input
  Scratch* scratch = nullptr;               // reusable temporaries (or null)
};

// Fills (*input_grads)[k] (sized like ctx.inputs) for every wanted k.
using BackwardFn = absl::Status (*)(const OpGradContext& ctx,
                                    std::vector<Tensor>* input_grads);

struct OpGradient {
  BackwardFn backward = nullptr;
  // Inputs [0, differentiable_inputs) may carry gradients; the rest (shapes,
  // axes, clip bounds) are constants of the op. -1: every input.
  int differentiable_inputs = 1;
};

// The backward pass of op_type (default ONNX domain), or null.
const OpGradient* FindOpGradient(const std::string& op_type);
// Ops whose outputs never carry a gradient (shapes, comparisons, indices).
bool IsNonDifferentiableOp(const std::string& op_type);
std::vector<std::string> DifferentiableOps();

// The op families (one file each).
absl::Status ActivationBackward(const OpGradContext& ctx,
                                std::vector<Tensor>* grads);
absl::Status BinaryBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads);
absl::Status ConvBackward(const OpGradContext& ctx, std::vector<Tensor>* grads);
// Conv and Max/AveragePool over 3 or more spatial axes (grad_window_nd.cc):
// direct loops over each output position's taps.
absl::Status ConvBackwardNd(const OpGradContext& ctx,
                            std::vector<Tensor>* grads);
absl::Status PoolBackwardNd(const OpGradContext& ctx, bool max,
                            std::vector<Tensor>* grads);
// The executor's window of ctx.node over x with `kernel` (its attributes,
// auto_pad and ceil_mode resolved as the forward kernel resolves them,
// core/executor/window.h); an error unless it gives y's spatial dims (y
// null: not checked). Every windowed op's backward pass takes its
// geometry from here.
absl::StatusOr<exec::WindowGeometry> ExecutorWindow(
    const OpGradContext& ctx, const Tensor& x, const Tensor* y,
    const std::vector<int64_t>& kernel);
// A 1-D or 2-D window as rows x columns (a 1-D window is one row): what the
// plane loops of grad_conv.cc and grad_pool.cc read.
struct PlaneWindow {
  int64_t h = 1, w = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
};
// `g` of rank 1 or 2 as a PlaneWindow.
PlaneWindow AsPlaneWindow(const exec::WindowGeometry& g);
// The geometry of a Conv over `in` with weight `w` from ctx.node's strides,
// dilations, pads, auto_pad and group (ExecutorWindow; checked against
// `out` when given): Conv's own, and the Conv a ConvTranspose is the
// adjoint of. 1-D and 2-D.
absl::StatusOr<train::ConvGeometry> ConvGeometryOf(const OpGradContext& ctx,
                                                   const Tensor& in,
                                                   const Tensor& w,
                                                   const Tensor* out);
absl::Status BatchNormBackward(const OpGradContext& ctx,
                               std::vector<Tensor>* grads);
absl::Status GemmBackward(const OpGradContext& ctx, std::vector<Tensor>* grads);
absl::Status MatMulBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads);
absl::Status SoftmaxBackward(const OpGradContext& ctx,
                             std::vector<Tensor>* grads);
absl::Status MaxPoolBackward(const OpGradContext& ctx,
                             std::vector<Tensor>* grads);
absl::Status AveragePoolBackward(const OpGradContext& ctx,
                                 std::vector<Tensor>* grads);
absl::Status GlobalAveragePoolBackward(const OpGradContext& ctx,
                                       std::vector<Tensor>* grads);
absl::Status ReshapeLikeBackward(const OpGradContext& ctx,
                                 std::vector<Tensor>* grads);
absl::Status TransposeBackward(const OpGradContext& ctx,
                               std::vector<Tensor>* grads);
absl::Status ConcatBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads);
absl::Status ReduceMeanBackward(const OpGradContext& ctx,
                                std::vector<Tensor>* grads);
absl::Status PowBackward(const OpGradContext& ctx, std::vector<Tensor>* grads);
absl::Status SqrtBackward(const OpGradContext& ctx, std::vector<Tensor>* grads);
absl::Status PadBackward(const OpGradContext& ctx, std::vector<Tensor>* grads);
absl::Status ResizeBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads);
absl::Status ConvTransposeBackward(const OpGradContext& ctx,
                                   std::vector<Tensor>* grads);
absl::Status SliceBackward(const OpGradContext& ctx,
                           std::vector<Tensor>* grads);

// "node 'x' (Conv): <what>" as INVALID_ARGUMENT / UNIMPLEMENTED.
absl::Status NodeError(const OpGradContext& ctx, const std::string& what);
absl::Status NodeUnimplemented(const OpGradContext& ctx,
                               const std::string& what);
// The output gradient k, or a zero tensor of the output's shape.
Tensor OutputGradOrZero(const OpGradContext& ctx, int k);
// Requires a float forward value (node error otherwise).
absl::Status RequireFloat(const OpGradContext& ctx, const Tensor* t,
                          const char* what);

}  // namespace quantd::autodiff::internal

#endif  // QUANTD_CORE_AUTODIFF_OP_GRADIENT_H_
