// Conv (1-D / 2-D, groups, pads, strides, dilations, auto_pad) as core/train's
// Conv2dBackward computes it (conv_backward.h; more spatial axes:
// grad_window_nd.cc), and inference-mode
// BatchNormalization:
//   y = (x - mean) * scale / sqrt(var + eps) + B.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/conv_backward.h"
#include "core/autodiff/op_gradient.h"
#include "core/executor/gemm.h"
#include "core/train/conv2d.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {

absl::StatusOr<train::ConvGeometry> ConvGeometryOf(const OpGradContext& ctx,
                                                   const Tensor& in,
                                                   const Tensor& w,
                                                   const Tensor* out) {
  const Node& n = *ctx.node;
  const int spatial = in.rank() - 2;
  if ((spatial != 1 && spatial != 2) || w.rank() != in.rank() ||
      (out != nullptr && out->rank() != in.rank())) {
    return NodeUnimplemented(
        ctx,
        absl::StrCat("a ", n.op_type, " on ", in.DebugString(), " with weight ",
                     w.DebugString(), " (1-D and 2-D only)"));
  }
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  ASSIGN_OR_RETURN(const exec::WindowGeometry win,
                   ExecutorWindow(ctx, in, out, kernel));
  train::ConvGeometry g;
  g.batch = in.dim(0);
  g.channels = in.dim(1);
  g.out_channels = w.dim(0);
  g.groups = n.GetInt("group", 1);
  const PlaneWindow p = AsPlaneWindow(win);
  g.height = p.h;
  g.width = p.w;
  g.kernel_h = p.kh;
  g.kernel_w = p.kw;
  g.stride_h = p.sh;
  g.stride_w = p.sw;
  g.dilation_h = p.dh;
  g.dilation_w = p.dw;
  g.pad_top = p.pt;
  g.pad_left = p.pl;
  g.pad_bottom = p.pb;
  g.pad_right = p.pr;
  RETURN_IF_ERROR(train::ValidateConvGeometry(g));
  return g;
}

namespace {

absl::StatusOr<train::ConvGeometry> GeometryOf(const OpGradContext& ctx) {
  const Tensor& x = *ctx.inputs[0];
  const Tensor& w = *ctx.inputs[1];
  const Tensor& y = *ctx.outputs[0];
  ASSIGN_OR_RETURN(train::ConvGeometry g, ConvGeometryOf(ctx, x, w, &y));
  if (w.dim(1) * g.groups != g.channels ||
      g.OutHeight() * g.OutWidth() * g.out_channels * g.batch !=
          y.num_elements()) {
    return NodeError(
        ctx, absl::StrCat("Conv geometry of ", x.DebugString(), " * ",
                          w.DebugString(), " does not give ", y.DebugString()));
  }
  return g;
}

// dx alone, in float, without im2col: dx[n, c, ih, iw] += w[m, c', kh, kw] *
// dy[n, m, oh, ow] over the taps, the inner loop along ow; a 1x1 stride-1
// unpadded dense Conv is one GEMM per image, dx = W^T dy.
void ConvInputGradient(const train::ConvGeometry& g, const float* w,
                       const float* dy, float* dx) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth();
  const int64_t cg = g.channels / g.groups, mg = g.out_channels / g.groups;
  const int64_t hw = g.height * g.width;
  std::fill(dx, dx + g.batch * g.channels * hw, 0.0f);
  if (g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 &&
      g.stride_w == 1 && g.groups == 1 && g.pad_top == 0 && g.pad_left == 0 &&
      g.pad_bottom == 0 && g.pad_right == 0) {
    for (int64_t n = 0; n < g.batch; ++n) {
      exec::GemmBlock<float>(true, false, g.channels, hw, g.out_channels, 1.0f,
                             w, g.channels, dy + n * g.out_channels * hw, hw,
                             dx + n * g.channels * hw, hw, false);
    }
    return;
  }
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      const int64_t group = m / mg;
      const float* gy = dy + (n * g.out_channels + m) * oh * ow;
      for (int64_t cl = 0; cl < cg; ++cl) {
        float* plane = dx + (n * g.channels + group * cg + cl) * hw;
        for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
          for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
            const float wv =
                w[((m * cg + cl) * g.kernel_h + kh) * g.kernel_w + kw];
            const int64_t dw0 = kw * g.dilation_w - g.pad_left;
            // ow range with 0 <= ow * stride + dw0 < width.
            int64_t lo = dw0 >= 0 ? 0 : (-dw0 + g.stride_w - 1) / g.stride_w;
            int64_t hi = g.width - dw0 <= 0
                             ? 0
                             : (g.width - dw0 + g.stride_w - 1) / g.stride_w;
            hi = std::min(hi, ow);
            for (int64_t i = 0; i < oh; ++i) {
              const int64_t ih = i * g.stride_h - g.pad_top + kh * g.dilation_h;
              if (ih < 0 || ih >= g.height || lo >= hi) continue;
              float* row = plane + ih * g.width + dw0;
              const float* grow = gy + i * ow;
              if (g.stride_w == 1) {
                for (int64_t j = lo; j < hi; ++j) row[j] += wv * grow[j];
              } else {
                for (int64_t j = lo; j < hi; ++j) {
                  row[j * g.stride_w] += wv * grow[j];
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

absl::Status ConvBackward(const OpGradContext& ctx,
                          std::vector<Tensor>* grads) {
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input X"));
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[1], "weight W"));
  if (ctx.inputs[0]->rank() > 4) return ConvBackwardNd(ctx, grads);
  ASSIGN_OR_RETURN(const train::ConvGeometry g, GeometryOf(ctx));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& w = *ctx.inputs[1];
  const bool want_b =
      ctx.inputs.size() > 2 && ctx.inputs[2] != nullptr && ctx.wants[2];
  if (!ctx.wants[1] && !want_b) {  // the data-generation case: dx only
    if (!ctx.wants[0]) return absl::OkStatus();
    const Tensor dyf = OutputGradOrZero(ctx, 0);
    Tensor dx = Tensor::Uninitialized(DType::kFloat, x.shape());
    ConvInputGradient(g, w.data<float>(), dyf.data<float>(),
                      dx.mutable_data<float>());
    (*grads)[0] = std::move(dx);
    return absl::OkStatus();
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx, dw, db;
  if (ctx.wants[0]) dx = Tensor::Uninitialized(DType::kFloat, x.shape());
  if (ctx.wants[1]) dw = Tensor::Uninitialized(DType::kFloat, w.shape());
  if (want_b) {
    db = Tensor::Uninitialized(DType::kFloat, ctx.inputs[2]->shape());
  }
  Scratch local;
  ConvBackwardDouble(g, x.data<float>(), w.data<float>(), dy.data<float>(),
                     ctx.wants[0] ? dx.mutable_data<float>() : nullptr,
                     ctx.wants[1] ? dw.mutable_data<float>() : nullptr,
                     want_b ? db.mutable_data<float>() : nullptr,
                     ctx.scratch != nullptr ? ctx.scratch : &local);
  if (ctx.wants[0]) (*grads)[0] = std::move(dx);
  if (ctx.wants[1]) (*grads)[1] = std::move(dw);
  if (want_b) (*grads)[2] = std::move(db);
  return absl::OkStatus();
}

absl::Status BatchNormBackward(const OpGradContext& ctx,
                               std::vector<Tensor>* grads) {
  if (ctx.inputs.size() < 5) return NodeError(ctx, "needs 5 inputs");
  for (int k = 0; k < 5; ++k) {
    RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[k], "every input"));
  }
  if (ctx.node->GetInt("training_mode", 0) != 0 || ctx.outputs.size() > 1) {
    return NodeUnimplemented(ctx, "training-mode BatchNormalization");
  }
  const Tensor& x = *ctx.inputs[0];
  if (x.rank() < 2) return NodeError(ctx, "input X must have rank >= 2");
  const int64_t c = x.dim(1), batch = x.dim(0);
  const int64_t inner = c == 0 ? 0 : x.num_elements() / (batch * c);
  for (int k = 1; k < 5; ++k) {
    if (ctx.inputs[k]->num_elements() != c) {
      return NodeError(
          ctx, absl::StrCat("input ", k, " has ", ctx.inputs[k]->num_elements(),
                            " values for ", c, " channels"));
    }
  }
  const double eps = ctx.node->GetFloat("epsilon", 1e-5f);
  const float* scale = ctx.inputs[1]->data<float>();
  const float* mean = ctx.inputs[3]->data<float>();
  const float* var = ctx.inputs[4]->data<float>();
  const Tensor dy = OutputGradOrZero(ctx, 0);
  const float* px = x.data<float>();
  const float* pg = dy.data<float>();
  float* dx = nullptr;
  if (ctx.wants[0]) {
    (*grads)[0] = Tensor::Uninitialized(DType::kFloat, x.shape());
    dx = (*grads)[0].mutable_data<float>();
  }
  // Per channel: sum(dy) and sum(dy * (x - mean)).
  std::vector<double> sum_g(c, 0.0), sum_gx(c, 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps);
      const int64_t base = (n * c + ch) * inner;
      const float m = mean[ch];
      double sg = 0, sgx = 0;
      for (int64_t i = 0; i < inner; ++i) {
        sg += pg[base + i];
        sgx += static_cast<double>(pg[base + i]) * (px[base + i] - m);
      }
      sum_g[ch] += sg;
      sum_gx[ch] += sgx;
      if (dx != nullptr) {
        const float k = static_cast<float>(scale[ch] * inv);
        for (int64_t i = 0; i < inner; ++i) dx[base + i] = pg[base + i] * k;
      }
    }
  }
  for (int k = 1; k < 5; ++k) {
    if (!ctx.wants[k]) continue;
    Tensor d = Tensor::Uninitialized(DType::kFloat, ctx.inputs[k]->shape());
    float* pd = d.mutable_data<float>();
    for (int64_t ch = 0; ch < c; ++ch) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps);
      double v = 0;
      switch (k) {
        case 1:  // scale
          v = sum_gx[ch] * inv;
          break;
        case 2:  // B
          v = sum_g[ch];
          break;
        case 3:  // mean
          v = -sum_g[ch] * scale[ch] * inv;
          break;
        case 4:  // var
          v = -0.5 * sum_gx[ch] * scale[ch] * inv * inv * inv;
          break;
      }
      pd[ch] = static_cast<float>(v);
    }
    (*grads)[k] = std::move(d);
  }
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
