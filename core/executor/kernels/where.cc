// Where: out = cond ? x : y, three-way broadcasting.
#include "core/executor/elementwise.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterWhere(KernelRegistry& r) {
  r.Register(
      "Where",
      [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& c = *ctx.input(0);
          const Tensor& x = *ctx.input(1);
          const Tensor& y = *ctx.input(2);
          if (c.dtype() != DType::kBool)
            return ctx.Error("condition must be bool");
          if (x.dtype() != y.dtype()) return ctx.Error("X and Y types differ");
          absl::StatusOr<std::vector<int64_t>> s =
              BroadcastShape(c.shape(), x.shape());
          if (s.ok()) s = BroadcastShape(*s, y.shape());
          if (!s.ok()) return ctx.Error(s.status().message());
          const std::vector<int64_t> shape = *s;
          const BroadcastPlan plan(shape, {c.shape(), x.shape(), y.shape()});
          return DispatchBySize(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateUninitialized(
                                                   0, x.dtype(), shape));
                const bool* pc = c.data<bool>();
                const T* px = RawAs<T>(x);
                const T* py = RawAs<T>(y);
                T* po = MutableRawAs<T>(*out);
                const int64_t inner = plan.inner();
                const int64_t sc = plan.inner_step(0), sx = plan.inner_step(1),
                              sy = plan.inner_step(2);
                ForEachRowSlice(ctx.pool(), plan.rows(), inner,
                                [&](int64_t r, int64_t begin, int64_t end) {
                                  int64_t off[3];
                                  plan.RowOffsets(r, off);
                                  T* o = po + r * inner;
                                  for (int64_t i = begin; i < end; ++i) {
                                    o[i] = pc[off[0] + i * sc]
                                               ? px[off[1] + i * sx]
                                               : py[off[2] + i * sy];
                                  }
                                });
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
