// Softmax: y = exp(x - max) / sum(exp(x - max)); LogSoftmax: y = x - max -
// log(sum); Hardmax: one-hot of the first maximum. Opset < 13 coerces the
// input to 2-D at axis (default 1); since 13 a single axis (default -1).
#include <cmath>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/kernels/losses.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Kind { kSoftmax, kLogSoftmax, kHardmax };

template <typename T>
void Normalize(Kind kind, const T* x, T* y, int64_t n, int64_t stride) {
  T mx = x[0];
  int64_t arg = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i * stride] > mx) {
      mx = x[i * stride];
      arg = i;
    }
  }
  if (kind == Kind::kHardmax) {
    for (int64_t i = 0; i < n; ++i) y[i * stride] = i == arg ? T(1) : T(0);
    return;
  }
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T e = std::exp(x[i * stride] - mx);
    if (kind == Kind::kSoftmax) y[i * stride] = e;
    sum += e;
  }
  if (kind == Kind::kSoftmax) {
    const T inv = T(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i * stride] *= inv;
  } else {
    const T ls = std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i * stride] = x[i * stride] - mx - ls;
  }
}

void RegisterKind(KernelRegistry& r, const char* name, Kind kind) {
  r.Register(
      name,
      [kind](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool legacy = info.opset < 13;
        const int64_t axis_attr = info.node.GetInt("axis", legacy ? 1 : -1);
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.rank() == 0) return ctx.Error("input must have rank >= 1");
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
          int64_t outer = 1, n = 1, inner = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
          if (legacy) {
            for (int64_t d = axis; d < x.rank(); ++d) n *= x.dim(d);
          } else {
            n = x.dim(axis);
            for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
          }
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, x.dtype(), x.shape()));
                if (n == 0) return absl::OkStatus();
                const T* in = x.data<T>();
                T* out = y->mutable_data<T>();
                ParallelFor(ctx.pool(), outer * inner,
                            std::max<int64_t>(1, 4096 / n),
                            [&](int64_t b, int64_t e) {
                              for (int64_t p = b; p < e; ++p) {
                                const int64_t o = p / inner, i = p % inner;
                                const int64_t off = o * n * inner + i;
                                Normalize(kind, in + off, out + off, n, inner);
                              }
                            });
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace

void RegisterSoftmax(KernelRegistry& r) {
  RegisterKind(r, "Softmax", Kind::kSoftmax);
  RegisterKind(r, "LogSoftmax", Kind::kLogSoftmax);
  RegisterKind(r, "Hardmax", Kind::kHardmax);
  RegisterLosses(r);
}

}  // namespace quantd::exec
