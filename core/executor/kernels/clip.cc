// Clip: y = min(max(x, min), max). Opset < 11: min/max attributes; later:
// optional inputs (absent = no bound). If min > max every output is max.
#include <algorithm>
#include <limits>

#include "core/executor/elementwise.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterClip(KernelRegistry& r) {
  r.Register(
      "Clip",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool attr_form = info.opset < 11;
        const float attr_min =
            info.node.GetFloat("min", std::numeric_limits<float>::lowest());
        const float attr_max =
            info.node.GetFloat("max", std::numeric_limits<float>::max());
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          return DispatchNumeric(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                T lo = std::numeric_limits<T>::lowest();
                T hi = std::numeric_limits<T>::max();
                if (attr_form) {
                  lo = static_cast<T>(attr_min);
                  hi = static_cast<T>(attr_max);
                } else {
                  for (int k : {1, 2}) {
                    const Tensor* b = ctx.input(k);
                    if (b == nullptr) continue;
                    if (b->dtype() != x.dtype() || b->num_elements() != 1) {
                      return ctx.Error(
                          absl::StrCat(k == 1 ? "min" : "max",
                                       " must be a scalar of the input "
                                       "type, got ",
                                       b->DebugString()));
                    }
                    (k == 1 ? lo : hi) = b->data<T>()[0];
                  }
                }
                return UnarySameType<T>(ctx, [lo, hi](T v) {
                  return lo > hi ? hi : std::min(std::max(v, lo), hi);
                });
              });
        });
      });
}

}  // namespace quantd::exec
