// Expand: y = broadcast(x, shape) (bidirectional). Tile: y[o] = x[o mod dim]
// with out dims = dims * repeats.
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/strided_copy.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterExpand(KernelRegistry& r) {
  r.Register("Expand",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel([](KernelContext& ctx) -> absl::Status {
                 const Tensor& x = *ctx.input(0);
                 if (ctx.input(1) == nullptr)
                   return ctx.Error("shape input is required");
                 ASSIGN_OR_RETURN(auto spec, ReadInts(*ctx.input(1), "shape"));
                 for (int64_t d : spec) {
                   if (d < 0) return ctx.Error("negative dim in shape");
                 }
                 absl::StatusOr<std::vector<int64_t>> shape =
                     BroadcastShape(x.shape(), spec);
                 if (!shape.ok()) return ctx.Error(shape.status().message());
                 const int64_t r = static_cast<int64_t>(shape->size());
                 std::vector<int64_t> strides(r, 0);
                 const std::vector<int64_t> in_strides = StridesOf(x.shape());
                 for (int64_t d = 0; d < x.rank(); ++d) {
                   const int64_t od = d + r - x.rank();
                   strides[od] = x.dim(d) == 1 ? 0 : in_strides[d];
                 }
                 return DispatchBySize(
                     x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                       ASSIGN_OR_RETURN(Tensor * y,
                                        ctx.Allocate(0, x.dtype(), *shape));
                       if (y->num_elements() > 0) {
                         StridedCopy<T>(ctx.pool(), *shape, strides, 0,
                                        RawAs<T>(x), MutableRawAs<T>(*y));
                       }
                       return absl::OkStatus();
                     });
               });
             });
}

void RegisterTile(KernelRegistry& r) {
  r.Register(
      "Tile", [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (ctx.input(1) == nullptr)
            return ctx.Error("repeats input is required");
          ASSIGN_OR_RETURN(auto reps, ReadInts(*ctx.input(1), "repeats"));
          if (static_cast<int64_t>(reps.size()) != x.rank()) {
            return ctx.Error("repeats length differs from input rank");
          }
          const int64_t r = x.rank();
          // View the output as [rep0, d0, rep1, d1, ...] with zero strides on
          // reps.
          std::vector<int64_t> shape, vshape, vstrides;
          const std::vector<int64_t> in_strides = StridesOf(x.shape());
          for (int64_t d = 0; d < r; ++d) {
            if (reps[d] < 0) return ctx.Error("negative repeat");
            if (reps[d] != 0 && x.dim(d) > (int64_t{1} << 40) / reps[d]) {
              return ctx.Error("tiled shape too large");
            }
            shape.push_back(x.dim(d) * reps[d]);
            vshape.push_back(reps[d]);
            vstrides.push_back(0);
            vshape.push_back(x.dim(d));
            vstrides.push_back(in_strides[d]);
          }
          return DispatchBySize(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, x.dtype(), shape));
                if (y->num_elements() > 0) {
                  StridedCopy<T>(ctx.pool(), vshape, vstrides, 0, RawAs<T>(x),
                                 MutableRawAs<T>(*y));
                }
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
