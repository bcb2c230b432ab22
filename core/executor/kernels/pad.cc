// Pad: y = x padded by pads [b1..bn, e1..en] (negative pads crop) with mode
// constant / reflect / edge / wrap. Attributes before opset 11, inputs
// since (axes input from 18).
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Maps an output coordinate to an input one; -1 for the constant value.
int64_t SourceIndex(int64_t o, int64_t pad_begin, int64_t n, PadMode mode) {
  int64_t i = o - pad_begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - i;
    }
    case PadMode::kWrap:
      i %= n;
      return i < 0 ? i + n : i;
  }
  return -1;
}

absl::Status ComputePad(KernelContext& ctx, PadMode mode,
                        std::vector<int64_t> pads, double value,
                        const std::vector<int64_t>* axes_in) {
  const Tensor& x = *ctx.input(0);
  const int64_t r = x.rank();
  if (axes_in != nullptr && !axes_in->empty()) {
    if (pads.size() != 2 * axes_in->size()) {
      return ctx.Error("pads length does not match axes");
    }
    std::vector<int64_t> full(2 * r, 0);
    const int64_t na = static_cast<int64_t>(axes_in->size());
    for (int64_t i = 0; i < na; ++i) {
      ASSIGN_OR_RETURN(int64_t a, NormalizeAxis((*axes_in)[i], r, "axes"));
      full[a] = pads[i];
      full[a + r] = pads[i + na];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * r) {
    return ctx.Error(
        absl::StrCat("pads has ", pads.size(), " values, expected ", 2 * r));
  }
  std::vector<int64_t> shape(r);
  for (int64_t d = 0; d < r; ++d) {
    shape[d] = x.dim(d) + pads[d] + pads[d + r];
    if (shape[d] < 0) return ctx.Error("pads crop more than the input");
    if (mode != PadMode::kConstant && x.dim(d) == 0 && shape[d] > 0) {
      return ctx.Error("cannot reflect/edge/wrap-pad an empty axis");
    }
  }
  const std::vector<int64_t> in_strides = StridesOf(x.shape());
  return DispatchAll(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, x.dtype(), shape));
    const int64_t n = y->num_elements();
    if (n == 0) return absl::OkStatus();
    const T* in = x.data<T>();
    T* out = y->mutable_data<T>();
    const T fill = static_cast<T>(value);
    const int64_t inner = shape[r - 1];
    const int64_t rows = n / inner;
    std::vector<int64_t> inner_src(inner);
    for (int64_t j = 0; j < inner; ++j) {
      inner_src[j] = SourceIndex(j, pads[r - 1], x.dim(r - 1), mode);
    }
    ParallelFor(ctx.pool(), rows, std::max<int64_t>(1, 4096 / inner),
                [&](int64_t rb, int64_t re) {
                  for (int64_t row = rb; row < re; ++row) {
                    int64_t rem = row, off = 0;
                    bool constant = false;
                    for (int64_t d = r - 2; d >= 0; --d) {
                      const int64_t o = rem % shape[d];
                      rem /= shape[d];
                      const int64_t i = SourceIndex(o, pads[d], x.dim(d), mode);
                      if (i < 0) constant = true;
                      off += i * in_strides[d];
                    }
                    T* po = out + row * inner;
                    for (int64_t j = 0; j < inner; ++j) {
                      po[j] = (constant || inner_src[j] < 0)
                                  ? fill
                                  : in[off + inner_src[j]];
                    }
                  }
                });
    return absl::OkStatus();
  });
}

absl::StatusOr<PadMode> ParseMode(const KernelInfo& info) {
  const std::string m = info.node.GetString("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  return info.Error(absl::StrCat("unknown mode '", m, "'"));
}

}  // namespace

void RegisterPad(KernelRegistry& r) {
  r.Register(
      "Pad",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(PadMode mode, ParseMode(info));
        if (info.opset < 11) {
          std::vector<int64_t> pads = info.node.GetInts("pads");
          if (pads.empty()) pads = info.node.GetInts("paddings");
          const double value = info.node.GetFloat("value", 0.0f);
          return MakeKernel([=](KernelContext& ctx) {
            return ComputePad(ctx, mode, pads, value, nullptr);
          });
        }
        return MakeKernel([mode](KernelContext& ctx) -> absl::Status {
          if (ctx.input(1) == nullptr)
            return ctx.Error("pads input is required");
          ASSIGN_OR_RETURN(auto pads, ReadInts(*ctx.input(1), "pads"));
          double value = 0;
          if (const Tensor* v = ctx.input(2);
              v != nullptr && v->num_elements() > 0) {
            ASSIGN_OR_RETURN(value, ReadScalar(*v, "constant_value"));
          }
          std::vector<int64_t> axes;
          if (ctx.input(3) != nullptr) {
            ASSIGN_OR_RETURN(axes, ReadInts(*ctx.input(3), "axes"));
          }
          return ComputePad(ctx, mode, pads, value, &axes);
        });
      });
}

}  // namespace quantd::exec
