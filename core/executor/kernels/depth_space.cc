// DepthToSpace (DCR: [N, b, b, C/b^2, H, W]; CRD: [N, C/b^2, b, b, H, W]) and
// SpaceToDepth, as strided copies over 6-D views.
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/strided_copy.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

absl::Status Run(KernelContext& ctx, int64_t bs, bool to_space, bool crd) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() != 4) return ctx.Error("input must be 4-D");
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  std::vector<int64_t> out_shape, view, strides;
  if (to_space) {
    if (C % (bs * bs) != 0)
      return ctx.Error("channels not divisible by blocksize^2");
    const int64_t c = C / (bs * bs);
    out_shape = {N, c, H * bs, W * bs};
    // Output index order: n, c, h, b1, w, b2.
    view = {N, c, H, bs, W, bs};
    const int64_t sW = 1, sH = W, sC = H * W, sN = C * H * W;
    if (crd) {  // input channel = c * bs * bs + b1 * bs + b2
      strides = {sN, bs * bs * sC, sH, bs * sC, sW, sC};
    } else {  // DCR: input channel = b1 * bs * c + b2 * c + c
      strides = {sN, sC, sH, bs * c * sC, sW, c * sC};
    }
  } else {
    if (H % bs != 0 || W % bs != 0)
      return ctx.Error("spatial dims not divisible by blocksize");
    const int64_t h = H / bs, w = W / bs;
    out_shape = {N, C * bs * bs, h, w};
    // Output channel = (b1 * bs + b2) * C + c; order n, b1, b2, c, h, w.
    view = {N, bs, bs, C, h, w};
    strides = {C * H * W, W, 1, H * W, bs * W, bs};
  }
  return DispatchBySize(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, x.dtype(), out_shape));
    if (y->num_elements() > 0) {
      StridedCopy<T>(ctx.pool(), view, strides, 0, RawAs<T>(x),
                     MutableRawAs<T>(*y));
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterDepthSpace(KernelRegistry& r) {
  r.Register(
      "DepthToSpace",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t bs = info.node.GetInt("blocksize", 0);
        if (bs <= 0) return info.Error("blocksize must be positive");
        const bool crd = info.node.GetString("mode", "DCR") == "CRD";
        return MakeKernel(
            [=](KernelContext& ctx) { return Run(ctx, bs, true, crd); });
      });
  r.Register(
      "SpaceToDepth",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t bs = info.node.GetInt("blocksize", 0);
        if (bs <= 0) return info.Error("blocksize must be positive");
        return MakeKernel(
            [=](KernelContext& ctx) { return Run(ctx, bs, false, false); });
      });
}

}  // namespace quantd::exec
