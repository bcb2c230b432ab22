// Element-wise loops shared by unary, binary and variadic kernels.
#ifndef QUANTD_CORE_EXECUTOR_ELEMENTWISE_H_
#define QUANTD_CORE_EXECUTOR_ELEMENTWISE_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"

namespace quantd::exec {

inline constexpr int64_t kElementGrain = 1 << 15;

// Whether an element-wise output may reuse a donated operand's buffer:
// floating-point tensors (activations, the hot ones) and int32/int64 (shape
// arithmetic, sometimes large index tensors). The other integer types never
// are hot, and the in-place loops they would need cost compile time.
template <typename T>
inline constexpr bool kRunsInPlace =
    std::is_floating_point_v<T> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t>;

// out[i] = op(in[i]) over n elements, chunked on the pool. out must not
// overlap in. The local copies and __restrict let the compiler keep op's
// captures in registers and vectorise branch-free ops.
template <typename T, typename R, typename Op>
void UnaryLoop(ThreadPool* pool, const T* in, R* out, int64_t n, Op op) {
  ParallelFor(pool, n, kElementGrain, [&](int64_t b, int64_t e) {
    const Op f = op;
    const T* __restrict src = in;
    R* __restrict dst = out;
    for (int64_t i = b; i < e; ++i) dst[i] = f(src[i]);
  });
}

// data[i] = op(data[i]): UnaryLoop's in-place form, same chunks.
template <typename T, typename Op>
void UnaryLoopInPlace(ThreadPool* pool, T* data, int64_t n, Op op) {
  ParallelFor(pool, n, kElementGrain, [&](int64_t b, int64_t e) {
    const Op f = op;
    T* __restrict p = data;
    for (int64_t i = b; i < e; ++i) p[i] = f(p[i]);
  });
}

// Output 0 = op(input 0), both of type T and of one shape: computed over the
// input's own buffer when the executor donated it (its last use, not shared),
// else into a fresh output. Same values either way.
template <typename T, typename Op>
absl::Status UnarySameType(KernelContext& ctx, Op op) {
  if constexpr (kRunsInPlace<T>) {
    if (Tensor* x = ctx.DonatedInput(0)) {
      UnaryLoopInPlace(ctx.pool(), x->mutable_data<T>(), x->num_elements(), op);
      ctx.SetOutput(0, std::move(*x));
      return absl::OkStatus();
    }
  }
  const Tensor& x = *ctx.input(0);
  absl::StatusOr<Tensor*> y =
      ctx.AllocateUninitialized(0, x.dtype(), x.shape());
  if (!y.ok()) return y.status();
  UnaryLoop(ctx.pool(), x.data<T>(), (*y)->template mutable_data<T>(),
            x.num_elements(), op);
  return absl::OkStatus();
}

// Calls fn(row, begin, end) over [begin, end) slices of `rows` rows of
// `inner` elements each, in chunks of about kElementGrain elements on the
// pool. Rows longer than a chunk are cut into slices, so a whole-tensor
// element-wise op (same shapes or a scalar operand: one row) still uses
// every thread. Element-wise results do not depend on the slicing.
template <typename Fn>
void ForEachRowSlice(ThreadPool* pool, int64_t rows, int64_t inner, Fn fn) {
  if (rows <= 0 || inner <= 0) return;
  if (inner < 2 * kElementGrain) {
    ParallelFor(pool, rows, std::max<int64_t>(1, kElementGrain / inner),
                [&](int64_t rb, int64_t re) {
                  for (int64_t r = rb; r < re; ++r) fn(r, int64_t{0}, inner);
                });
    return;
  }
  const int64_t slices = (inner + kElementGrain - 1) / kElementGrain;
  ParallelFor(pool, rows * slices, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t begin = (k % slices) * kElementGrain;
      fn(k / slices, begin, std::min(inner, begin + kElementGrain));
    }
  });
}

// out = op(a, b) with numpy broadcasting, as planned by `plan`.
template <typename A, typename B, typename R, typename Op>
void BinaryLoop(ThreadPool* pool, const BroadcastPlan& plan, const A* a,
                const B* b, R* out, Op op) {
  const int64_t inner = plan.inner();
  const int64_t sa = plan.inner_step(0);
  const int64_t sb = plan.inner_step(1);
  ForEachRowSlice(pool, plan.rows(), inner,
                  [&](int64_t r, int64_t begin, int64_t end) {
                    // Captures in registers, not reloaded per store.
                    const Op op_local = op;
                    int64_t off[3];
                    plan.RowOffsets(r, off);
                    const A* pa = a + off[0] + begin * sa;
                    const B* pb = b + off[1] + begin * sb;
                    R* po = out + r * inner + begin;
                    const int64_t n = end - begin;
                    if constexpr (!std::is_floating_point_v<A>) {
                      // Integer and bool operands (shapes, masks, indices)
                      // are never hot: one strided loop instead of four
                      // specialised ones keeps the kernels' code, and their
                      // compile time, small.
                      for (int64_t i = 0; i < n; ++i) {
                        po[i] = op_local(pa[i * sa], pb[i * sb]);
                      }
                    } else if (sa == 1 && sb == 1) {
                      for (int64_t i = 0; i < n; ++i) {
                        po[i] = op_local(pa[i], pb[i]);
                      }
                    } else if (sa == 0 && sb == 1) {
                      const A x = pa[0];
                      for (int64_t i = 0; i < n; ++i)
                        po[i] = op_local(x, pb[i]);
                    } else if (sa == 1 && sb == 0) {
                      const B y = pb[0];
                      for (int64_t i = 0; i < n; ++i)
                        po[i] = op_local(pa[i], y);
                    } else {
                      const R v = op_local(pa[0], pb[0]);
                      for (int64_t i = 0; i < n; ++i) po[i] = v;
                    }
                  });
}

// BinaryLoop over the buffer of operand `kIo` (0: a, 1: b), which has the
// output's shape: io[i] = op(io[i], other[..]) (or op(other[..], io[i])).
// `other` must not overlap io. A loop of its own because BinaryLoop's, which
// may not assume that its output and inputs are disjoint, falls back to
// scalar code when they coincide.
template <int kIo, typename T, typename Op>
void BinaryLoopInPlace(ThreadPool* pool, const BroadcastPlan& plan, T* io,
                       const T* other, Op op) {
  static_assert(kIo == 0 || kIo == 1);
  const int64_t inner = plan.inner();
  const int64_t so = plan.inner_step(1 - kIo);
  ForEachRowSlice(pool, plan.rows(), inner,
                  [&](int64_t r, int64_t begin, int64_t end) {
                    const Op f = op;
                    int64_t off[3];
                    plan.RowOffsets(r, off);
                    T* __restrict p = io + r * inner + begin;
                    const T* __restrict q = other + off[1 - kIo] + begin * so;
                    const int64_t n = end - begin;
                    auto apply = [&f](T mine, T theirs) {
                      if constexpr (kIo == 0) {
                        return f(mine, theirs);
                      } else {
                        return f(theirs, mine);
                      }
                    };
                    if (so == 1) {
                      for (int64_t i = 0; i < n; ++i) p[i] = apply(p[i], q[i]);
                    } else if (so == 0) {
                      const T y = q[0];
                      for (int64_t i = 0; i < n; ++i) p[i] = apply(p[i], y);
                    } else {
                      for (int64_t i = 0; i < n; ++i)
                        p[i] = apply(p[i], q[i * so]);
                    }
                  });
}

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_ELEMENTWISE_H_
