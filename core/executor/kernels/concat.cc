// Concat: y = inputs joined along axis (zero-size inputs allowed).
#include <cstring>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterConcat(KernelRegistry& r) {
  r.Register(
      "Concat",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr =
            info.node.GetInt("axis", info.opset < 4 ? 1 : 0);
        if (info.opset >= 4 && !info.node.HasAttribute("axis")) {
          return info.Error("missing required attribute 'axis'");
        }
        return MakeKernel([axis_attr](KernelContext& ctx) -> absl::Status {
          std::vector<const Tensor*> ins;
          for (int k = 0; k < ctx.num_inputs(); ++k) {
            if (ctx.input(k) != nullptr) ins.push_back(ctx.input(k));
          }
          if (ins.empty()) return ctx.Error("no inputs");
          const Tensor& first = *ins[0];
          ASSIGN_OR_RETURN(int64_t axis,
                           NormalizeAxis(axis_attr, first.rank()));
          std::vector<int64_t> shape = first.shape();
          shape[axis] = 0;
          for (const Tensor* t : ins) {
            if (t->dtype() != first.dtype() || t->rank() != first.rank()) {
              return ctx.Error(absl::StrCat("input ", t->DebugString(),
                                            " does not match ",
                                            first.DebugString()));
            }
            for (int64_t d = 0; d < first.rank(); ++d) {
              if (d != axis && t->dim(d) != first.dim(d)) {
                return ctx.Error(
                    absl::StrCat("input ", t->DebugString(), " does not match ",
                                 first.DebugString(), " off axis ", axis));
              }
            }
            shape[axis] += t->dim(axis);
          }
          ASSIGN_OR_RETURN(Tensor * y,
                           ctx.AllocateUninitialized(0, first.dtype(), shape));
          int64_t outer = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
          int64_t inner = DTypeSize(first.dtype());
          for (int64_t d = axis + 1; d < first.rank(); ++d) inner *= shape[d];
          char* out = static_cast<char*>(y->mutable_raw());
          const int64_t out_row = shape[axis] * inner;
          int64_t col = 0;
          for (const Tensor* t : ins) {
            const int64_t row = t->dim(axis) * inner;
            const char* in = static_cast<const char*>(t->raw());
            for (int64_t o = 0; o < outer && row > 0; ++o) {
              std::memcpy(out + o * out_row + col, in + o * row, row);
            }
            col += row;
          }
          return absl::OkStatus();
        });
      });
}

}  // namespace quantd::exec
