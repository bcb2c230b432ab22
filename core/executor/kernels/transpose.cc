// Transpose: y[i_perm...] = x[i...]; perm defaults to reversed axes.
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/strided_copy.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterTranspose(KernelRegistry& r) {
  r.Register(
      "Transpose",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const std::vector<int64_t> perm_attr = info.node.GetInts("perm");
        return MakeKernel([perm_attr](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const int64_t r = x.rank();
          std::vector<int64_t> perm = perm_attr;
          if (perm.empty()) {
            for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
          }
          if (static_cast<int64_t>(perm.size()) != r) {
            return ctx.Error(absl::StrCat("perm has ", perm.size(),
                                          " entries for ", x.DebugString()));
          }
          std::vector<char> seen(r, 0);
          for (int64_t p : perm) {
            if (p < 0 || p >= r || seen[p])
              return ctx.Error("perm is not a permutation");
            seen[p] = 1;
          }
          const std::vector<int64_t> in_strides = StridesOf(x.shape());
          std::vector<int64_t> shape(r), strides(r);
          for (int64_t d = 0; d < r; ++d) {
            shape[d] = x.dim(perm[d]);
            strides[d] = in_strides[perm[d]];
          }
          return DispatchBySize(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(
                    Tensor * y, ctx.AllocateUninitialized(0, x.dtype(), shape));
                StridedCopy<T>(ctx.pool(), shape, strides, 0, RawAs<T>(x),
                               MutableRawAs<T>(*y));
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
