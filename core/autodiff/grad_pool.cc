// MaxPool (the gradient goes to the first maximum of each window),
// AveragePool (dy / divisor to each counted position) and GlobalAveragePool
// (dy / area everywhere). 1-D and 2-D windows here; more spatial axes in
// grad_window_nd.cc.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/op_gradient.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

struct Window : PlaneWindow {
  int64_t planes = 0;
};

absl::StatusOr<Window> WindowOf(const OpGradContext& ctx) {
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.outputs[0];
  const int spatial = x.rank() - 2;
  if ((spatial != 1 && spatial != 2) || y.rank() != x.rank()) {
    return NodeUnimplemented(
        ctx, absl::StrCat("pooling of ", x.DebugString(), " (1-D, 2-D only)"));
  }
  ASSIGN_OR_RETURN(
      const exec::WindowGeometry g,
      ExecutorWindow(ctx, x, &y, ctx.node->GetInts("kernel_shape")));
  Window w;
  static_cast<PlaneWindow&>(w) = AsPlaneWindow(g);
  w.planes = x.dim(0) * x.dim(1);
  return w;
}

}  // namespace

absl::Status MaxPoolBackward(const OpGradContext& ctx,
                             std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  if (ctx.inputs[0]->rank() > 4) return PoolBackwardNd(ctx, true, grads);
  ASSIGN_OR_RETURN(const Window w, WindowOf(ctx));
  const Tensor& x = *ctx.inputs[0];
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx(DType::kFloat, x.shape());
  const float* px = x.data<float>();
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  for (int64_t c = 0; c < w.planes; ++c) {
    const float* xp = px + c * w.h * w.w;
    float* dp = pd + c * w.h * w.w;
    const float* gp = pg + c * w.oh * w.ow;
    for (int64_t i = 0; i < w.oh; ++i) {
      for (int64_t j = 0; j < w.ow; ++j) {
        int64_t best = -1;
        float best_v = 0;
        for (int64_t a = 0; a < w.kh; ++a) {
          const int64_t r = i * w.sh - w.pt + a * w.dh;
          if (r < 0 || r >= w.h) continue;
          for (int64_t b = 0; b < w.kw; ++b) {
            const int64_t q = j * w.sw - w.pl + b * w.dw;
            if (q < 0 || q >= w.w) continue;
            const float v = xp[r * w.w + q];
            if (best < 0 || v > best_v) {
              best = r * w.w + q;
              best_v = v;
            }
          }
        }
        if (best >= 0) dp[best] += gp[i * w.ow + j];
      }
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

absl::Status AveragePoolBackward(const OpGradContext& ctx,
                                 std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  if (ctx.inputs[0]->rank() > 4) return PoolBackwardNd(ctx, false, grads);
  ASSIGN_OR_RETURN(const Window w, WindowOf(ctx));
  const bool include_pad = ctx.node->GetInt("count_include_pad", 0) != 0;
  const Tensor& x = *ctx.inputs[0];
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx(DType::kFloat, x.shape());
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  for (int64_t c = 0; c < w.planes; ++c) {
    float* dp = pd + c * w.h * w.w;
    const float* gp = pg + c * w.oh * w.ow;
    for (int64_t i = 0; i < w.oh; ++i) {
      for (int64_t j = 0; j < w.ow; ++j) {
        int64_t count = 0;
        for (int64_t a = 0; a < w.kh; ++a) {
          const int64_t r = i * w.sh - w.pt + a * w.dh;
          for (int64_t b = 0; b < w.kw; ++b) {
            const int64_t q = j * w.sw - w.pl + b * w.dw;
            const bool valid = r >= 0 && r < w.h && q >= 0 && q < w.w;
            const bool padded =
                r >= -w.pt && r < w.h + w.pb && q >= -w.pl && q < w.w + w.pr;
            count += include_pad ? padded : valid;
          }
        }
        if (count == 0) continue;
        const float g = gp[i * w.ow + j] / static_cast<float>(count);
        for (int64_t a = 0; a < w.kh; ++a) {
          const int64_t r = i * w.sh - w.pt + a * w.dh;
          if (r < 0 || r >= w.h) continue;
          for (int64_t b = 0; b < w.kw; ++b) {
            const int64_t q = j * w.sw - w.pl + b * w.dw;
            if (q >= 0 && q < w.w) dp[r * w.w + q] += g;
          }
        }
      }
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

absl::Status GlobalAveragePoolBackward(const OpGradContext& ctx,
                                       std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  if (x.rank() < 2) return NodeError(ctx, "input must have rank >= 2");
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t area = planes == 0 ? 0 : x.num_elements() / planes;
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx = Tensor::Uninitialized(DType::kFloat, x.shape());
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  for (int64_t c = 0; c < planes; ++c) {
    const float g = pg[c] / static_cast<float>(area);
    for (int64_t i = 0; i < area; ++i) pd[c * area + i] = g;
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
