// Conv, MaxPool and AveragePool over three or more spatial axes (a video or
// volume network's): direct loops over each output position's taps, in
// double for the Conv's sums. The 1-D and 2-D ops keep their own kernels
// (grad_conv.cc, grad_pool.cc); these run as often as the forward op and do
// its arithmetic once more. And ExecutorWindow, the window geometry all of
// them take from the executor, with AsPlaneWindow its 1-D / 2-D view.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/op_gradient.h"
#include "core/executor/window.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

absl::StatusOr<exec::WindowGeometry> ExecutorWindow(
    const OpGradContext& ctx, const Tensor& x, const Tensor* y,
    const std::vector<int64_t>& kernel) {
  absl::StatusOr<exec::WindowAttrs> attrs = exec::ReadWindowAttrs(*ctx.node);
  if (!attrs.ok()) return NodeError(ctx, std::string(attrs.status().message()));
  const std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  absl::StatusOr<exec::WindowGeometry> w =
      exec::ComputeWindow(*attrs, in, kernel);
  if (!w.ok()) return NodeError(ctx, std::string(w.status().message()));
  if (y != nullptr &&
      (y->rank() != x.rank() ||
       !std::equal(w->out.begin(), w->out.end(), y->shape().begin() + 2))) {
    return NodeError(ctx, absl::StrCat("window over ", x.DebugString(),
                                       " does not give ", y->DebugString()));
  }
  return w;
}

PlaneWindow AsPlaneWindow(const exec::WindowGeometry& g) {
  PlaneWindow p;
  const int last = g.rank() - 1;
  p.w = g.in[last];
  p.ow = g.out[last];
  p.kw = g.kernel[last];
  p.sw = g.stride[last];
  p.dw = g.dilation[last];
  p.pl = g.pad_begin[last];
  p.pr = g.pad_end[last];
  if (g.rank() == 2) {
    p.h = g.in[0];
    p.oh = g.out[0];
    p.kh = g.kernel[0];
    p.sh = g.stride[0];
    p.dh = g.dilation[0];
    p.pt = g.pad_begin[0];
    p.pb = g.pad_end[0];
  }
  return p;
}

absl::Status ConvBackwardNd(const OpGradContext& ctx,
                            std::vector<Tensor>* grads) {
  const Tensor& x = *ctx.inputs[0];
  const Tensor& w = *ctx.inputs[1];
  const Tensor& y = *ctx.outputs[0];
  if (w.rank() != x.rank()) {
    return NodeError(
        ctx, absl::StrCat("weight ", w.DebugString(), " does not match input ",
                          x.DebugString()));
  }
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  ASSIGN_OR_RETURN(const exec::WindowGeometry win,
                   ExecutorWindow(ctx, x, &y, kernel));
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), Cg = w.dim(1);
  const int64_t G = ctx.node->GetInt("group", 1);
  if (G < 1 || Cg * G != C || M % G != 0 || y.dim(0) != N || y.dim(1) != M) {
    return NodeError(
        ctx, absl::StrCat("Conv geometry of ", x.DebugString(), " * ",
                          w.DebugString(), " does not give ", y.DebugString()));
  }
  const bool want_x = ctx.wants[0], want_w = ctx.wants[1];
  const bool want_b =
      ctx.inputs.size() > 2 && ctx.inputs[2] != nullptr && ctx.wants[2];
  const int64_t in_size = Product(win.in), out_size = Product(win.out);
  const int64_t taps = Product(win.kernel), Mg = M / G;
  const Tensor dy = OutputGradOrZero(ctx, 0);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pg = dy.data<float>();
  std::vector<double> dx(want_x ? x.num_elements() : 0);
  std::vector<double> dw(want_w ? w.num_elements() : 0);
  std::vector<double> db(want_b ? M : 0);
  std::vector<int64_t> index;
  std::vector<char> padded;
  for (int64_t o = 0; o < out_size; ++o) {
    exec::WindowTaps(win, o, &index, &padded);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t m = 0; m < M; ++m) {
        const double g = pg[(n * M + m) * out_size + o];
        if (want_b) db[m] += g;
        const int64_t c0 = m / Mg * Cg;
        for (int64_t cl = 0; cl < Cg; ++cl) {
          const int64_t plane = (n * C + c0 + cl) * in_size;
          const int64_t kernel_at = (m * Cg + cl) * taps;
          for (int64_t t = 0; t < taps; ++t) {
            if (index[t] < 0) continue;
            if (want_x) dx[plane + index[t]] += pw[kernel_at + t] * g;
            if (want_w) dw[kernel_at + t] += px[plane + index[t]] * g;
          }
        }
      }
    }
  }
  auto to_float = [](const std::vector<double>& v, const Tensor& like) {
    Tensor t = Tensor::Uninitialized(DType::kFloat, like.shape());
    float* p = t.mutable_data<float>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(v[i]);
    return t;
  };
  if (want_x) (*grads)[0] = to_float(dx, x);
  if (want_w) (*grads)[1] = to_float(dw, w);
  if (want_b) (*grads)[2] = to_float(db, *ctx.inputs[2]);
  return absl::OkStatus();
}

absl::Status PoolBackwardNd(const OpGradContext& ctx, bool max,
                            std::vector<Tensor>* grads) {
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.outputs[0];
  ASSIGN_OR_RETURN(
      const exec::WindowGeometry win,
      ExecutorWindow(ctx, x, &y, ctx.node->GetInts("kernel_shape")));
  const bool include_pad = ctx.node->GetInt("count_include_pad", 0) != 0;
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_size = Product(win.in), out_size = Product(win.out);
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx(DType::kFloat, x.shape());
  const float* px = x.data<float>();
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  std::vector<int64_t> index;
  std::vector<char> padded;
  for (int64_t o = 0; o < out_size; ++o) {
    exec::WindowTaps(win, o, &index, &padded);
    int64_t count = 0;
    for (size_t t = 0; t < index.size(); ++t) {
      count += include_pad ? padded[t] : index[t] >= 0;
    }
    for (int64_t c = 0; c < planes; ++c) {
      const float* xp = px + c * in_size;
      float* dp = pd + c * in_size;
      const float g = pg[c * out_size + o];
      if (max) {  // the first maximum of the window takes the gradient
        int64_t best = -1;
        for (int64_t i : index) {
          if (i >= 0 && (best < 0 || xp[i] > xp[best])) best = i;
        }
        if (best >= 0) dp[best] += g;
      } else if (count > 0) {
        const float share = g / static_cast<float>(count);
        for (int64_t i : index) {
          if (i >= 0) dp[i] += share;
        }
      }
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
