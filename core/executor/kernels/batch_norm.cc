// BatchNormalization (inference): y = scale * (x - mean) / sqrt(var + eps) + B
// per channel (axis 1), folded to y = a[c] * x + b[c].
#include <cmath>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterBatchNorm(KernelRegistry& r) {
  r.Register(
      "BatchNormalization",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const double eps = info.node.GetFloat("epsilon", 1e-5f);
        if (info.node.GetInt("training_mode", 0) != 0) {
          return absl::UnimplementedError(
              absl::StrCat(info.node.Label(),
                           ": training_mode BatchNormalization is not "
                           "supported"));
        }
        if (info.opset < 9 && info.node.GetInt("spatial", 1) == 0) {
          return absl::UnimplementedError(
              absl::StrCat(info.node.Label(), ": spatial=0 is not supported"));
        }
        return MakeKernel([eps](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.rank() < 2) return ctx.Error("input must have rank >= 2");
          const int64_t C = x.dim(1);
          for (int k = 1; k <= 4; ++k) {
            const Tensor* t = ctx.input(k);
            if (t == nullptr || t->num_elements() != C ||
                t->dtype() != x.dtype()) {
              return ctx.Error(absl::StrCat("input ", k, " must have ", C,
                                            " elements of the input type"));
            }
          }
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                std::vector<T> a(C), b(C);
                const T* scale = ctx.input(1)->data<T>();
                const T* bias = ctx.input(2)->data<T>();
                const T* mean = ctx.input(3)->data<T>();
                const T* var = ctx.input(4)->data<T>();
                for (int64_t c = 0; c < C; ++c) {
                  const double s = static_cast<double>(scale[c]) /
                                   std::sqrt(static_cast<double>(var[c]) + eps);
                  a[c] = static_cast<T>(s);
                  b[c] = static_cast<T>(static_cast<double>(bias[c]) -
                                        s * static_cast<double>(mean[c]));
                }
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, x.dtype(), x.shape()));
                int64_t inner = 1;
                for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
                const T* in = x.data<T>();
                T* out = y->mutable_data<T>();
                ParallelFor(ctx.pool(), x.dim(0) * C,
                            std::max<int64_t>(
                                1, (1 << 15) / std::max<int64_t>(inner, 1)),
                            [&](int64_t pb, int64_t pe) {
                              for (int64_t p = pb; p < pe; ++p) {
                                const int64_t c = p % C;
                                // Locals: the stores cannot alias them, so
                                // the loop vectorises without reloads.
                                const T ac = a[c], bc = b[c];
                                const T* __restrict i = in + p * inner;
                                T* __restrict o = out + p * inner;
                                for (int64_t j = 0; j < inner; ++j)
                                  o[j] = ac * i[j] + bc;
                              }
                            });
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
