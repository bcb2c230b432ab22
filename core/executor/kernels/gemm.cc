// Gemm: Y = alpha * op(A) * op(B) + beta * C (C broadcasts to [M, N]).
#include "core/executor/gemm.h"

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

struct GemmAttrs {
  float alpha = 1, beta = 1;
  bool trans_a = false, trans_b = false;
};

absl::Status ComputeGemm(KernelContext& ctx, const GemmAttrs& at) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  const Tensor* c = ctx.input(2);
  if (a.rank() != 2 || b.rank() != 2) {
    return ctx.Error(absl::StrCat("A ", a.DebugString(), " and B ",
                                  b.DebugString(), " must be 2-D"));
  }
  if (a.dtype() != b.dtype() || (c && c->dtype() != a.dtype())) {
    return ctx.Error("input types differ");
  }
  const int64_t M = at.trans_a ? a.dim(1) : a.dim(0);
  const int64_t K = at.trans_a ? a.dim(0) : a.dim(1);
  const int64_t KB = at.trans_b ? b.dim(1) : b.dim(0);
  const int64_t N = at.trans_b ? b.dim(0) : b.dim(1);
  if (K != KB) {
    return ctx.Error(absl::StrCat("inner dims differ: A ", a.DebugString(),
                                  " B ", b.DebugString()));
  }
  const std::vector<int64_t> shape = {M, N};
  if (c != nullptr) {
    absl::StatusOr<std::vector<int64_t>> bs = BroadcastShape(shape, c->shape());
    if (!bs.ok() || *bs != shape) {
      return ctx.Error(absl::StrCat("C ", c->DebugString(),
                                    " does not broadcast to ",
                                    ShapeString(shape)));
    }
  }
  return DispatchFloat(a.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, a.dtype(), shape));
    T* out = y->mutable_data<T>();
    const bool with_c = c != nullptr && at.beta != 0.0f;
    if (with_c) {
      const BroadcastPlan plan(shape, {shape, c->shape()});
      const T beta = static_cast<T>(at.beta);
      int64_t off[3];
      for (int64_t r = 0; r < plan.rows(); ++r) {
        plan.RowOffsets(r, off);
        const T* pc = c->data<T>() + off[1];
        T* po = out + r * plan.inner();
        for (int64_t i = 0; i < plan.inner(); ++i) {
          po[i] = beta * pc[i * plan.inner_step(1)];
        }
      }
    }
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const int64_t lda = a.dim(1), ldb = b.dim(1);
    // Row blocks when M is large, else column blocks (shape-only split).
    constexpr int64_t kRows = 64, kCols = 256;
    if (M >= 2 * kRows) {
      ParallelFor(ctx.pool(), (M + kRows - 1) / kRows, 1,
                  [&](int64_t bb, int64_t be) {
                    for (int64_t blk = bb; blk < be; ++blk) {
                      const int64_t m0 = blk * kRows;
                      const int64_t mb = std::min(kRows, M - m0);
                      const T* ablk = at.trans_a ? pa + m0 : pa + m0 * lda;
                      GemmBlock<T>(at.trans_a, at.trans_b, mb, N, K,
                                   static_cast<T>(at.alpha), ablk, lda, pb, ldb,
                                   out + m0 * N, N, with_c);
                    }
                  });
    } else {
      ParallelFor(ctx.pool(), (N + kCols - 1) / kCols, 1,
                  [&](int64_t bb, int64_t be) {
                    for (int64_t blk = bb; blk < be; ++blk) {
                      const int64_t n0 = blk * kCols;
                      const int64_t nb = std::min(kCols, N - n0);
                      const T* bblk = at.trans_b ? pb + n0 * ldb : pb + n0;
                      GemmBlock<T>(at.trans_a, at.trans_b, M, nb, K,
                                   static_cast<T>(at.alpha), pa, lda, bblk, ldb,
                                   out + n0, N, with_c);
                    }
                  });
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterGemm(KernelRegistry& r) {
  r.Register(
      "Gemm",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        GemmAttrs at;
        at.alpha = info.node.GetFloat("alpha", 1.0f);
        at.beta = info.node.GetFloat("beta", 1.0f);
        at.trans_a = info.node.GetInt("transA", 0) != 0;
        at.trans_b = info.node.GetInt("transB", 0) != 0;
        return MakeKernel(
            [at](KernelContext& ctx) { return ComputeGemm(ctx, at); });
      });
}

}  // namespace quantd::exec
