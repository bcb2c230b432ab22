// MatMul: numpy matmul (1-D operands promoted, batch dims broadcast).
#include "core/executor/gemm.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

absl::Status ComputeMatMul(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype() != b.dtype()) return ctx.Error("input types differ");
  if (a.rank() == 0 || b.rank() == 0) return ctx.Error("scalar operand");
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back();
  const int64_t KB = bs[bs.size() - 2], N = bs.back();
  if (K != KB) {
    return ctx.Error(absl::StrCat("inner dims differ: ", a.DebugString(), " x ",
                                  b.DebugString()));
  }
  const std::vector<int64_t> a_batch(as.begin(), as.end() - 2);
  const std::vector<int64_t> b_batch(bs.begin(), bs.end() - 2);
  absl::StatusOr<std::vector<int64_t>> batch = BroadcastShape(a_batch, b_batch);
  if (!batch.ok()) return ctx.Error(batch.status().message());
  std::vector<int64_t> shape = *batch;
  if (!a_vec) shape.push_back(M);
  if (!b_vec) shape.push_back(N);
  const int64_t nb = NumElements(*batch);
  // Offsets of each batch item in A and B.
  const BroadcastPlan plan(*batch, {a_batch, b_batch});
  return DispatchNumeric(a.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, a.dtype(), shape));
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* out = y->mutable_data<T>();
    auto item_offsets = [&](int64_t i, int64_t* oa, int64_t* ob) {
      int64_t off[3];
      plan.RowOffsets(i / plan.inner(), off);
      const int64_t j = i % plan.inner();
      *oa = off[0] + j * plan.inner_step(0);
      *ob = off[1] + j * plan.inner_step(1);
    };
    if constexpr (std::is_floating_point_v<T>) {
      constexpr int64_t kRows = 64;
      const int64_t row_blocks = nb == 1 ? (M + kRows - 1) / kRows : 1;
      const int64_t rows = nb == 1 ? kRows : M;
      ParallelFor(ctx.pool(), nb * row_blocks, 1, [&](int64_t ib, int64_t ie) {
        for (int64_t it = ib; it < ie; ++it) {
          const int64_t i = it / row_blocks;
          const int64_t m0 = (it % row_blocks) * rows;
          const int64_t mb = std::min(rows, M - m0);
          int64_t oa, ob;
          item_offsets(i, &oa, &ob);
          GemmBlock<T>(false, false, mb, N, K, T(1), pa + oa * M * K + m0 * K,
                       K, pb + ob * K * N, N, out + i * M * N + m0 * N, N,
                       false);
        }
      });
    } else {
      for (int64_t i = 0; i < nb; ++i) {
        int64_t oa, ob;
        item_offsets(i, &oa, &ob);
        const T* ai = pa + oa * M * K;
        const T* bi = pb + ob * K * N;
        T* yi = out + i * M * N;
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t n = 0; n < N; ++n) {
            T acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc += ai[m * K + k] * bi[k * N + n];
            yi[m * N + n] = acc;
          }
        }
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterMatMul(KernelRegistry& r) {
  r.Register("MatMul",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel(ComputeMatMul);
             });
}

}  // namespace quantd::exec
