// Variadic element-wise ops with broadcasting: Sum, Mean, Min, Max.
#include <algorithm>
#include <cmath>

#include "core/executor/elementwise.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Fold { kSum, kMean, kMin, kMax };

absl::Status RunVariadic(KernelContext& ctx, Fold fold) {
  std::vector<const Tensor*> ins;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    if (ctx.input(k) != nullptr) ins.push_back(ctx.input(k));
  }
  if (ins.empty()) return ctx.Error("needs at least one input");
  std::vector<int64_t> shape = ins[0]->shape();
  for (const Tensor* t : ins) {
    if (t->dtype() != ins[0]->dtype()) {
      return ctx.Error("inputs have different types");
    }
    absl::StatusOr<std::vector<int64_t>> s = BroadcastShape(shape, t->shape());
    if (!s.ok()) return ctx.Error(s.status().message());
    shape = *s;
  }
  return DispatchNumeric(
      ins[0]->dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
        if (fold == Fold::kMean && !std::is_floating_point_v<T>) {
          return UnsupportedDType("floating-point", ins[0]->dtype());
        }
        ASSIGN_OR_RETURN(Tensor * y,
                         ctx.AllocateUninitialized(0, ins[0]->dtype(), shape));
        T* out = y->mutable_data<T>();
        // Broadcast the first input, then fold the others in place (the order
        // of operands is fixed, so results do not depend on threads).
        const BroadcastPlan first(shape, {shape, ins[0]->shape()});
        BinaryLoop(ctx.pool(), first, out, ins[0]->data<T>(), out,
                   [](T, T v) { return v; });
        for (size_t k = 1; k < ins.size(); ++k) {
          const BroadcastPlan plan(shape, {shape, ins[k]->shape()});
          const T* b = ins[k]->data<T>();
          switch (fold) {
            case Fold::kSum:
            case Fold::kMean:
              BinaryLoop(ctx.pool(), plan, out, b, out,
                         [](T x, T v) { return static_cast<T>(x + v); });
              break;
            case Fold::kMin:
              BinaryLoop(ctx.pool(), plan, out, b, out, [](T x, T v) {
                if constexpr (std::is_floating_point_v<T>) {
                  if (std::isnan(x) || std::isnan(v)) return x + v;
                }
                return std::min(x, v);
              });
              break;
            case Fold::kMax:
              BinaryLoop(ctx.pool(), plan, out, b, out, [](T x, T v) {
                if constexpr (std::is_floating_point_v<T>) {
                  if (std::isnan(x) || std::isnan(v)) return x + v;
                }
                return std::max(x, v);
              });
              break;
          }
        }
        if (fold == Fold::kMean) {
          const T n = static_cast<T>(ins.size());
          for (T& v : y->mutable_span<T>()) v /= n;
        }
        return absl::OkStatus();
      });
}

}  // namespace

void RegisterVariadic(KernelRegistry& r) {
  const std::pair<const char*, Fold> ops[] = {{"Sum", Fold::kSum},
                                              {"Mean", Fold::kMean},
                                              {"Min", Fold::kMin},
                                              {"Max", Fold::kMax}};
  for (const auto& [name, fold] : ops) {
    const Fold f = fold;
    r.Register(
        name,
        [f](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
          return MakeKernel(
              [f](KernelContext& ctx) { return RunVariadic(ctx, f); });
        });
  }
}

}  // namespace quantd::exec
