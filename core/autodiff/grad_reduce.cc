// Backward passes of the normalisation arithmetic (LayerNorm as exported:
// ReduceMean, Pow, Sqrt) and of Slice and Pad (each output's gradient goes
// to the input element it copies; none for Pad's constant).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/broadcast.h"
#include "core/autodiff/op_gradient.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

// Axes of a reduction or slice: input `k` (when present) or attribute
// "axes", normalised to [0, rank).
absl::StatusOr<std::vector<int64_t>> AxesOf(const OpGradContext& ctx, size_t k,
                                            int64_t rank) {
  std::vector<int64_t> axes;
  if (k < ctx.inputs.size() && ctx.inputs[k] != nullptr) {
    const Tensor* t = ctx.inputs[k];
    if (t->dtype() != DType::kInt64) {
      return NodeError(ctx, "axes must be int64, got " + t->DebugString());
    }
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->num_elements());
  } else {
    axes = ctx.node->GetInts("axes", {});
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return NodeError(
          ctx, absl::StrCat("axis ", a, " out of range for rank ", rank));
    }
    if (a < 0) a += rank;
  }
  return axes;
}

}  // namespace

// dx = dy / count, broadcast back over the reduced axes.
absl::Status ReduceMeanBackward(const OpGradContext& ctx,
                                std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  const int64_t rank = x.rank();
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx, 1, rank));
  std::vector<bool> reduced(rank, false);
  if (axes.empty()) {
    // Empty axes: all of them, unless noop_with_empty_axes (opset 18).
    if (ctx.node->GetInt("noop_with_empty_axes", 0) != 0) {
      (*grads)[0] = OutputGradOrZero(ctx, 0);
      return absl::OkStatus();
    }
    reduced.assign(rank, true);
  }
  for (int64_t a : axes) reduced[a] = true;
  std::vector<int64_t> kept_shape = x.shape();
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) continue;
    count *= x.dim(d);
    kept_shape[d] = 1;
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  if (dy.num_elements() * std::max<int64_t>(count, 1) != x.num_elements()) {
    return NodeError(ctx, "output gradient " + dy.DebugString() +
                              " does not match the reduced input " +
                              x.DebugString());
  }
  Tensor dx = Tensor::Uninitialized(DType::kFloat, x.shape());
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  const float inv = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
  const std::vector<std::vector<int64_t>> strides = {
      BroadcastStrides(kept_shape, x.shape())};
  ForEachRow(x.shape(), strides,
             [&](int64_t out, const int64_t* offsets, int64_t length) {
               const int64_t step = strides[0].empty() ? 0 : strides[0].back();
               for (int64_t i = 0; i < length; ++i) {
                 pd[out + i] = pg[offsets[0] + i * step] * inv;
               }
             });
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

// y = x^p with a constant scalar exponent: dx = p * x^(p-1) * dy.
absl::Status PowBackward(const OpGradContext& ctx, std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor* p = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  if (p == nullptr || p->num_elements() != 1 ||
      (p->dtype() != DType::kFloat && p->dtype() != DType::kInt64)) {
    return NodeUnimplemented(
        ctx, "a gradient through Pow needs a scalar float or int64 exponent");
  }
  const double e = p->dtype() == DType::kFloat
                       ? static_cast<double>(p->data<float>()[0])
                       : static_cast<double>(p->data<int64_t>()[0]);
  const Tensor& x = *ctx.inputs[0];
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx = Tensor::Uninitialized(DType::kFloat, x.shape());
  const float* px = x.data<float>();
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double d = e == 2.0 ? 2.0 * px[i] : e * std::pow(px[i], e - 1.0);
    pd[i] = static_cast<float>(d * pg[i]);
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

// y = sqrt(x): dx = dy / (2 y); 0 where y = 0 (the subgradient PyTorch
// would give as inf is of no use to an optimiser).
absl::Status SqrtBackward(const OpGradContext& ctx,
                          std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.outputs[0], "output"));
  const Tensor& y = *ctx.outputs[0];
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx = Tensor::Uninitialized(DType::kFloat, y.shape());
  const float* py = y.data<float>();
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    pd[i] = py[i] > 0.0f ? pg[i] / (2.0f * py[i]) : 0.0f;
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

// Slice (starts, ends, axes, steps as inputs from opset 10, attributes
// before): dy scattered into zeros at the sliced positions.
absl::Status SliceBackward(const OpGradContext& ctx,
                           std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  const int64_t rank = x.rank();
  auto ints = [&](size_t k) -> absl::StatusOr<std::vector<int64_t>> {
    const Tensor* t = k < ctx.inputs.size() ? ctx.inputs[k] : nullptr;
    if (t == nullptr) return std::vector<int64_t>();
    if (t->dtype() == DType::kInt64) {
      return std::vector<int64_t>(t->data<int64_t>(),
                                  t->data<int64_t>() + t->num_elements());
    }
    if (t->dtype() == DType::kInt32) {
      return std::vector<int64_t>(t->data<int32_t>(),
                                  t->data<int32_t>() + t->num_elements());
    }
    return NodeError(ctx, "Slice input " + std::to_string(k) +
                              " must be int32/int64, got " + t->DebugString());
  };
  // Before opset 10 starts, ends and axes are attributes (no input 3:
  // AxesOf reads the attribute) and every step is 1.
  std::vector<int64_t> starts, ends, steps;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx, 3, rank));
  if (ctx.opset < 10) {
    starts = ctx.node->GetInts("starts", {});
    ends = ctx.node->GetInts("ends", {});
  } else {
    ASSIGN_OR_RETURN(starts, ints(1));
    ASSIGN_OR_RETURN(ends, ints(2));
    ASSIGN_OR_RETURN(steps, ints(4));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return NodeError(ctx, "starts, ends, axes and steps differ in length");
  }
  // Per dimension: the first index and step in x (ONNX's clamping).
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = axes[i], n = x.dim(d), s = steps[i];
    if (s == 0) return NodeError(ctx, "a Slice step is 0");
    int64_t b = starts[i] < 0 ? starts[i] + n : starts[i];
    b = s > 0 ? std::clamp<int64_t>(b, 0, n) : std::clamp<int64_t>(b, 0, n - 1);
    first[d] = b;
    step[d] = s;
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  if (dy.rank() != rank) return NodeError(ctx, "gradient rank mismatch");
  Tensor dx(DType::kFloat, x.shape());
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  std::vector<int64_t> x_stride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    x_stride[d] = x_stride[d + 1] * x.dim(d + 1);
  }
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < dy.num_elements(); ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) {
      off += (first[d] + idx[d] * step[d]) * x_stride[d];
    }
    pd[off] += pg[i];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < dy.dim(d)) break;
      idx[d] = 0;
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

namespace {

// The input coordinate output coordinate `o` copies along one axis (the
// executor's Pad), -1 for the constant value.
int64_t PadSource(int64_t o, int64_t pad_begin, int64_t n,
                  const std::string& mode) {
  int64_t i = o - pad_begin;
  if (i >= 0 && i < n) return i;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "reflect") {
    if (n == 1) return 0;
    const int64_t period = 2 * (n - 1);
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
  }
  if (mode == "wrap") {
    i %= n;
    return i < 0 ? i + n : i;
  }
  return -1;
}

}  // namespace

absl::Status PadBackward(const OpGradContext& ctx, std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  const int64_t rank = x.rank();
  const std::string mode = ctx.node->GetString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap") {
    return NodeError(ctx, absl::StrCat("unknown mode '", mode, "'"));
  }
  std::vector<int64_t> pads;
  if (ctx.opset < 11) {
    pads = ctx.node->GetInts("pads", {});
  } else {
    const Tensor* p = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
    if (p == nullptr || p->dtype() != DType::kInt64) {
      return NodeError(ctx, "pads must be an int64 input");
    }
    pads.assign(p->data<int64_t>(), p->data<int64_t>() + p->num_elements());
  }
  const Tensor* axes_in = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  if (axes_in != nullptr && axes_in->num_elements() > 0) {
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx, 3, rank));
    if (pads.size() != 2 * axes.size()) {
      return NodeError(ctx, "pads length does not match axes");
    }
    std::vector<int64_t> full(2 * rank, 0);
    const size_t na = axes.size();
    for (size_t i = 0; i < na; ++i) {
      full[axes[i]] = pads[i];
      full[axes[i] + rank] = pads[i + na];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    return NodeError(ctx, "pads does not match the input rank");
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  if (dy.rank() != rank) return NodeError(ctx, "gradient rank mismatch");
  std::vector<int64_t> x_stride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    x_stride[d] = x_stride[d + 1] * x.dim(d + 1);
  }
  Tensor dx(DType::kFloat, x.shape());
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < dy.num_elements(); ++i) {
    int64_t off = 0;
    bool constant = false;
    for (int64_t d = 0; d < rank && !constant; ++d) {
      const int64_t src = PadSource(idx[d], pads[d], x.dim(d), mode);
      if (src < 0) constant = true;
      off += src * x_stride[d];
    }
    if (!constant) pd[off] += pg[i];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < dy.dim(d)) break;
      idx[d] = 0;
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
