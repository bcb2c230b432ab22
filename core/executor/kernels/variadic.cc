// Variadic element-wise ops with broadcasting: Sum, Mean, Min, Max.
#include <algorithm>
#include <cmath>
#include <utility>

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
        // The output may take the buffer of a donated input of its shape
        // among the first two, which are read before anything is written.
        Tensor* donated = nullptr;
        for (int k = 0; k < std::min<int>(2, ins.size()); ++k) {
          if (ins[k] == ctx.input(k) && ins[k]->shape() == shape) {
            donated = ctx.DonatedInput(k);
            if (donated != nullptr) break;
          }
        }
        Tensor* y = donated;
        if (y == nullptr) {
          ASSIGN_OR_RETURN(
              y, ctx.AllocateUninitialized(0, ins[0]->dtype(), shape));
        }
        T* out = y->mutable_data<T>();
        // Combine the first two inputs (or copy a lone one), then fold the
        // others in place; the order of operands is fixed, so results do
        // not depend on threads. NaN propagates through Min/Max (numpy);
        // written as selects of compared values, which vectorise.
        auto fold_with = [&](auto op) {
          if (ins.size() == 1) {
            if (donated != nullptr) return;  // out already holds it
            const BroadcastPlan plan(shape, {shape, ins[0]->shape()});
            BinaryLoop(ctx.pool(), plan, out, ins[0]->data<T>(), out,
                       [](T, T v) { return v; });
            return;
          }
          const BroadcastPlan two(shape, {ins[0]->shape(), ins[1]->shape()});
          if (donated == ins[0]) {
            BinaryLoopInPlace<0>(ctx.pool(), two, out, ins[1]->data<T>(), op);
          } else if (donated == ins[1]) {
            BinaryLoopInPlace<1>(ctx.pool(), two, out, ins[0]->data<T>(), op);
          } else {
            BinaryLoop(ctx.pool(), two, ins[0]->data<T>(), ins[1]->data<T>(),
                       out, op);
          }
          for (size_t k = 2; k < ins.size(); ++k) {
            const BroadcastPlan plan(shape, {shape, ins[k]->shape()});
            BinaryLoop(ctx.pool(), plan, out, ins[k]->data<T>(), out, op);
          }
        };
        // One instantiation per fold, so the switch is resolved at compile
        // time inside the loops.
        switch (fold) {
          case Fold::kSum:
          case Fold::kMean:
            fold_with([](T x, T v) { return static_cast<T>(x + v); });
            break;
          case Fold::kMin:
            fold_with([](T x, T v) {
              const T m = !(v >= x) ? v : x;  // NaN v wins
              if constexpr (std::is_floating_point_v<T>) return x != x ? x : m;
              return m;
            });
            break;
          case Fold::kMax:
            fold_with([](T x, T v) {
              const T m = !(v <= x) ? v : x;  // NaN v wins
              if constexpr (std::is_floating_point_v<T>) return x != x ? x : m;
              return m;
            });
            break;
        }
        if (fold == Fold::kMean) {
          const T n = static_cast<T>(ins.size());
          for (T& v : y->mutable_span<T>()) v /= n;
        }
        if (donated != nullptr) ctx.SetOutput(0, std::move(*donated));
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
