// Slice: y = x[starts:ends:steps] on `axes` (attributes before opset 10,
// inputs since). Out-of-range bounds clamp; negative steps walk backwards.
#include <limits>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/strided_copy.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

absl::Status ComputeSlice(KernelContext& ctx, std::vector<int64_t> starts,
                          std::vector<int64_t> ends, std::vector<int64_t> axes,
                          std::vector<int64_t> steps) {
  const Tensor& x = *ctx.input(0);
  const int64_t r = x.rank();
  if (starts.size() != ends.size()) {
    return ctx.Error("starts and ends differ in length");
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return ctx.Error("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(r, 0), step(r, 1), shape = x.shape();
  std::vector<char> seen(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axes[i], r, "axes"));
    if (seen[a]) return ctx.Error("repeated axis");
    seen[a] = 1;
    const int64_t dim = x.dim(a);
    const int64_t s = steps[i];
    if (s == 0) return ctx.Error("step is 0");
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[a] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[a] = b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    begin[a] = b;
    step[a] = s;
  }
  const std::vector<int64_t> in_strides = StridesOf(x.shape());
  std::vector<int64_t> strides(r);
  int64_t base = 0;
  for (int64_t d = 0; d < r; ++d) {
    strides[d] = in_strides[d] * step[d];
    if (shape[d] > 0) base += begin[d] * in_strides[d];
  }
  return DispatchBySize(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(0, x.dtype(), shape));
    if (y->num_elements() > 0) {
      StridedCopy<T>(ctx.pool(), shape, strides, base, RawAs<T>(x),
                     MutableRawAs<T>(*y));
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterSlice(KernelRegistry& r) {
  r.Register(
      "Slice",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        if (info.opset < 10) {
          const auto starts = info.node.GetInts("starts");
          const auto ends = info.node.GetInts("ends");
          const auto axes = info.node.GetInts("axes");
          return MakeKernel([=](KernelContext& ctx) {
            return ComputeSlice(ctx, starts, ends, axes, {});
          });
        }
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          if (ctx.input(1) == nullptr || ctx.input(2) == nullptr) {
            return ctx.Error("starts and ends are required");
          }
          ASSIGN_OR_RETURN(auto starts, ReadInts(*ctx.input(1), "starts"));
          ASSIGN_OR_RETURN(auto ends, ReadInts(*ctx.input(2), "ends"));
          std::vector<int64_t> axes, steps;
          if (ctx.input(3) != nullptr) {
            ASSIGN_OR_RETURN(axes, ReadInts(*ctx.input(3), "axes"));
          }
          if (ctx.input(4) != nullptr) {
            ASSIGN_OR_RETURN(steps, ReadInts(*ctx.input(4), "steps"));
          }
          return ComputeSlice(ctx, starts, ends, axes, steps);
        });
      });
}

}  // namespace quantd::exec
