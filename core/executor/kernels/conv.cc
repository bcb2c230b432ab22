// Conv: y[n, m] = b[m] + sum_{c in group(m), k} w[m, c, k] * x[n, c, o*s - p +
// k*d], and its integer form ConvInteger.
#include <memory>

#include "core/executor/conv_kernels.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/packed_gemm.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

// Validates x [N, C, in...] against w [M, C/group, k...] and the window
// attributes; the geometry of the convolution.
absl::StatusOr<ConvShape> PlanConv(const KernelContext& ctx, const Tensor& x,
                                   const Tensor& w, const WindowAttrs& attrs,
                                   int64_t group) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return ctx.Error(absl::StrCat("input ", x.DebugString(), " and weight ",
                                  w.DebugString(),
                                  " must have the same rank >= 3"));
  }
  ConvShape s;
  s.batch = x.dim(0);
  s.in_channels = x.dim(1);
  s.out_channels = w.dim(0);
  s.group = group;
  if (s.in_channels != w.dim(1) * group || s.out_channels % group != 0) {
    return ctx.Error(absl::StrCat("weight ", w.DebugString(), " with group ",
                                  group, " does not match input ",
                                  x.DebugString()));
  }
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != kernel) {
    return ctx.Error(absl::StrCat("kernel_shape ",
                                  ShapeString(attrs.kernel_shape),
                                  " does not match weight ", w.DebugString()));
  }
  absl::StatusOr<WindowGeometry> geo = ComputeWindow(attrs, in, kernel);
  if (!geo.ok()) return ctx.Error(geo.status().message());
  s.geo = *std::move(geo);
  for (int64_t d : in) s.in_size *= d;
  for (int64_t d : kernel) s.kernel_size *= d;
  for (int64_t d : s.geo.out) s.out_size *= d;
  return s;
}

// A constant float kernel, packed once for every sample's products when
// ConvForward multiplies it (packing is lazy: a depthwise kernel, which
// ConvForward convolves directly, is never packed); nullptr otherwise.
std::shared_ptr<const PackedWeights> PackedConvWeights(const Tensor& w) {
  if (w.dtype() != DType::kFloat || w.num_elements() == 0) return nullptr;
  const int64_t depth = w.num_elements() / w.dim(0);
  return std::make_shared<PackedWeights>(w.data<float>(), w.dim(0), depth);
}

absl::Status ComputeConv(KernelContext& ctx, const WindowAttrs& attrs,
                         int64_t group, const PackedWeights* packed) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor* b = ctx.input(2);
  if (x.dtype() != DType::kFloat || w.dtype() != DType::kFloat ||
      (b != nullptr && b->dtype() != DType::kFloat)) {
    return absl::UnimplementedError(
        absl::StrCat("only float convolution is supported, got ",
                     x.DebugString(), " and ", w.DebugString()));
  }
  ASSIGN_OR_RETURN(const ConvShape s, PlanConv(ctx, x, w, attrs, group));
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != s.out_channels)) {
    return ctx.Error(absl::StrCat("bias ", b->DebugString(), " expected [",
                                  s.out_channels, "]"));
  }
  std::vector<int64_t> out_shape = {s.batch, s.out_channels};
  out_shape.insert(out_shape.end(), s.geo.out.begin(), s.geo.out.end());
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, DType::kFloat, out_shape));
  ConvForward(s, x.data<float>(), w.data<float>(),
              b ? b->data<float>() : nullptr, y->mutable_data<float>(),
              ctx.pool(), packed);
  return absl::OkStatus();
}

// ConvInteger: int32 y = conv(x - x_zero_point, w - w_zero_point), x and w
// uint8/int8, x_zero_point a scalar, w_zero_point a scalar or one per output
// channel. A direct loop with exact integer sums (quantized models are run
// for checking, not calibrated, so this path is not tuned).
absl::Status ComputeConvInteger(KernelContext& ctx, const WindowAttrs& attrs,
                                int64_t group) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  auto is_8bit = [](const Tensor& t) {
    return t.dtype() == DType::kUint8 || t.dtype() == DType::kInt8;
  };
  if (!is_8bit(x) || !is_8bit(w)) {
    return ctx.Error(absl::StrCat("x and w must be uint8 or int8, got ",
                                  x.DebugString(), " and ", w.DebugString()));
  }
  ASSIGN_OR_RETURN(const ConvShape s, PlanConv(ctx, x, w, attrs, group));
  auto widen = [](const Tensor& t, int64_t i) -> int32_t {
    return t.dtype() == DType::kUint8 ? t.data<uint8_t>()[i]
                                      : t.data<int8_t>()[i];
  };
  int32_t zx = 0;
  if (const Tensor* z = ctx.input(2)) {
    if (z->num_elements() != 1 || z->dtype() != x.dtype()) {
      return ctx.Error("x_zero_point must be one value of x's type");
    }
    zx = widen(*z, 0);
  }
  std::vector<int32_t> zw(s.out_channels, 0);
  if (const Tensor* z = ctx.input(3)) {
    if ((z->num_elements() != 1 && z->num_elements() != s.out_channels) ||
        z->dtype() != w.dtype()) {
      return ctx.Error(absl::StrCat("w_zero_point ", z->DebugString(),
                                    " must be a scalar or hold ",
                                    s.out_channels, " values of w's type"));
    }
    for (int64_t m = 0; m < s.out_channels; ++m) {
      zw[m] = widen(*z, z->num_elements() == 1 ? 0 : m);
    }
  }
  std::vector<int64_t> out_shape = {s.batch, s.out_channels};
  out_shape.insert(out_shape.end(), s.geo.out.begin(), s.geo.out.end());
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, DType::kInt32, out_shape));
  int32_t* out = y->mutable_data<int32_t>();
  const WindowGeometry& g = s.geo;
  const int r = g.rank();
  const int64_t Cg = s.in_channels / group, Mg = s.out_channels / group;
  std::vector<int64_t> o(r), k(r);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const int64_t g0 = (m / Mg) * Cg;
      for (int64_t p = 0; p < s.out_size; ++p) {
        for (int64_t d = r - 1, rem = p; d >= 0; --d) {
          o[d] = rem % g.out[d];
          rem /= g.out[d];
        }
        int64_t acc = 0;  // wide: huge K must wrap, not overflow (UB)
        for (int64_t c = 0; c < Cg; ++c) {
          for (int64_t kk = 0; kk < s.kernel_size; ++kk) {
            int64_t off = 0;
            bool inside = true;
            for (int64_t d = r - 1, rem = kk; d >= 0; --d) {
              k[d] = rem % g.kernel[d];
              rem /= g.kernel[d];
            }
            for (int d = 0; d < r && inside; ++d) {
              const int64_t i =
                  o[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
              inside = i >= 0 && i < g.in[d];
              off = off * g.in[d] + i;
            }
            // Padding holds the zero point, i.e. contributes 0.
            if (!inside) continue;
            const int32_t xv =
                widen(x, (n * s.in_channels + g0 + c) * s.in_size + off) - zx;
            const int32_t wv =
                widen(w, (m * Cg + c) * s.kernel_size + kk) - zw[m];
            acc += int64_t{xv} * wv;
          }
        }
        out[(n * s.out_channels + m) * s.out_size + p] =
            static_cast<int32_t>(acc);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterConv(KernelRegistry& r) {
  r.Register(
      "ConvInteger",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(WindowAttrs attrs, ReadWindowAttrs(info.node));
        const int64_t group = info.node.GetInt("group", 1);
        if (group <= 0) return info.Error("group must be positive");
        return MakeKernel([attrs, group](KernelContext& ctx) {
          return ComputeConvInteger(ctx, attrs, group);
        });
      });
  r.Register(
      "Conv",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(WindowAttrs attrs, ReadWindowAttrs(info.node));
        const int64_t group = info.node.GetInt("group", 1);
        if (group <= 0) return info.Error("group must be positive");
        std::shared_ptr<const PackedWeights> packed;
        if (const Tensor* w = info.ConstantInput(1)) {
          if (w->rank() < 3) {
            return info.Error(absl::StrCat("weight has ", w->rank(),
                                           " dims, expected at least 3"));
          }
          if (w->dim(0) % group != 0) {
            return info.Error(absl::StrCat("weight ", w->DebugString(),
                                           " output channels not divisible by "
                                           "group ",
                                           group));
          }
          packed = PackedConvWeights(*w);
        }
        return MakeKernel([attrs, group, packed](KernelContext& ctx) {
          return ComputeConv(ctx, attrs, group, packed.get());
        });
      });
}

}  // namespace quantd::exec
