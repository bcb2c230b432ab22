// Variadic element-wise ops with broadcasting: Sum, Mean, Min, Max.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/executor/elementwise.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Fold { kSum, kMean, kMin, kMax };

// y = op(...op(op(in0, in1), in2)..., inN) with broadcasting; the order of
// operands is fixed, so results do not depend on threads.
template <typename T, typename Op>
absl::Status FoldInputs(KernelContext& ctx,
                        const std::vector<const Tensor*>& ins,
                        const std::vector<int64_t>& shape, bool mean, Op op) {
  // The output may take the buffer of a donated input of its shape among
  // the first two, which are read before anything is written.
  Tensor* donated = nullptr;
  if constexpr (kRunsInPlace<T>) {
    for (int k = 0; k < std::min<int>(2, ins.size()); ++k) {
      if (ins[k] == ctx.input(k) && ins[k]->shape() == shape) {
        donated = ctx.DonatedInput(k);
        if (donated != nullptr) break;
      }
    }
  }
  Tensor* y = donated;
  if (y == nullptr) {
    ASSIGN_OR_RETURN(y, ctx.AllocateUninitialized(0, ins[0]->dtype(), shape));
  }
  T* out = y->mutable_data<T>();
  if (ins.size() == 1) {
    if (donated == nullptr) {  // a donated lone input already is the output
      const BroadcastPlan plan(shape, {shape, ins[0]->shape()});
      BinaryLoop(ctx.pool(), plan, out, ins[0]->data<T>(), out,
                 [](T, T v) { return v; });
    }
  } else {
    const BroadcastPlan two(shape, {ins[0]->shape(), ins[1]->shape()});
    if (donated != nullptr && donated == ins[0]) {
      BinaryLoopInPlace<0>(ctx.pool(), two, out, ins[1]->data<T>(), op);
    } else if (donated != nullptr) {
      BinaryLoopInPlace<1>(ctx.pool(), two, out, ins[0]->data<T>(), op);
    } else {
      BinaryLoop(ctx.pool(), two, ins[0]->data<T>(), ins[1]->data<T>(), out,
                 op);
    }
    for (size_t k = 2; k < ins.size(); ++k) {
      const BroadcastPlan plan(shape, {shape, ins[k]->shape()});
      BinaryLoop(ctx.pool(), plan, out, ins[k]->data<T>(), out, op);
    }
  }
  if (mean) {
    const T n = static_cast<T>(ins.size());
    for (T& v : y->mutable_span<T>()) v /= n;
  }
  if (donated != nullptr) ctx.SetOutput(0, std::move(*donated));
  return absl::OkStatus();
}

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
  const DType dtype = ins[0]->dtype();
  // One instantiation per fold and type, so the op is resolved at compile
  // time inside the loops. Sum and Mean take floating-point types only (as
  // in the ONNX spec), Min and Max every numeric type. NaN propagates
  // through Min/Max (numpy); written as selects of compared values, which
  // vectorise.
  switch (fold) {
    case Fold::kSum:
    case Fold::kMean:
      return DispatchFloat(dtype, [&]<typename T>(Tag<T>) {
        return FoldInputs<T>(ctx, ins, shape, fold == Fold::kMean,
                             [](T x, T v) { return static_cast<T>(x + v); });
      });
    case Fold::kMin:
      return DispatchNumeric(dtype, [&]<typename T>(Tag<T>) {
        return FoldInputs<T>(ctx, ins, shape, false, [](T x, T v) {
          const T m = !(v >= x) ? v : x;  // NaN v wins
          if constexpr (std::is_floating_point_v<T>) return x != x ? x : m;
          return m;
        });
      });
    case Fold::kMax:
      return DispatchNumeric(dtype, [&]<typename T>(Tag<T>) {
        return FoldInputs<T>(ctx, ins, shape, false, [](T x, T v) {
          const T m = !(v <= x) ? v : x;  // NaN v wins
          if constexpr (std::is_floating_point_v<T>) return x != x ? x : m;
          return m;
        });
      });
  }
  return ctx.Error("unknown fold");
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
