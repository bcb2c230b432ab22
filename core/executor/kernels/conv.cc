// Conv: y[n, m] = b[m] + sum_{c in group(m), k} w[m, c, k] * x[n, c, o*s - p +
// k*d]
#include "core/executor/conv_kernels.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

absl::Status ComputeConv(KernelContext& ctx, const WindowAttrs& attrs,
                         int64_t group) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor* b = ctx.input(2);
  if (x.dtype() != DType::kFloat || w.dtype() != DType::kFloat ||
      (b != nullptr && b->dtype() != DType::kFloat)) {
    return absl::UnimplementedError(
        absl::StrCat("only float convolution is supported, got ",
                     x.DebugString(), " and ", w.DebugString()));
  }
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
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != s.out_channels)) {
    return ctx.Error(absl::StrCat("bias ", b->DebugString(), " expected [",
                                  s.out_channels, "]"));
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
  std::vector<int64_t> out_shape = {s.batch, s.out_channels};
  out_shape.insert(out_shape.end(), s.geo.out.begin(), s.geo.out.end());
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, DType::kFloat, out_shape));
  ConvForward(s, x.data<float>(), w.data<float>(),
              b ? b->data<float>() : nullptr, y->mutable_data<float>(),
              ctx.pool());
  return absl::OkStatus();
}

}  // namespace

void RegisterConv(KernelRegistry& r) {
  r.Register(
      "Conv",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(WindowAttrs attrs, ReadWindowAttrs(info.node));
        const int64_t group = info.node.GetInt("group", 1);
        if (group <= 0) return info.Error("group must be positive");
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
        }
        return MakeKernel([attrs, group](KernelContext& ctx) {
          return ComputeConv(ctx, attrs, group);
        });
      });
}

}  // namespace quantd::exec
