// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point);
// DequantizeLinear: y = (x - zero_point) * scale. Scale/zero point are
// per-tensor (scalar) or per-axis (1-D along `axis`, default 1).
// DynamicQuantizeLinear: uint8 with scale = (max(0, max) - min(0, min)) / 255.
#include <cmath>
#include <limits>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

// Broadcast layout of a per-tensor or per-axis parameter: element i of x
// uses parameter (i / inner) % count.
struct AxisLayout {
  int64_t count = 1, inner = 1;
};

absl::StatusOr<AxisLayout> Layout(const KernelContext& ctx, const Tensor& x,
                                  const Tensor& scale, int64_t axis_attr) {
  AxisLayout l;
  if (scale.num_elements() == 1 && scale.rank() <= 1) return l;
  if (scale.rank() != 1) {
    return ctx.Error(absl::StrCat("scale must be a scalar or 1-D, got ",
                                  scale.DebugString()));
  }
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
  if (x.dim(axis) != scale.dim(0)) {
    return ctx.Error(absl::StrCat("scale ", scale.DebugString(),
                                  " does not match axis ", axis, " of ",
                                  x.DebugString()));
  }
  l.count = scale.dim(0);
  for (int64_t d = axis + 1; d < x.rank(); ++d) l.inner *= x.dim(d);
  return l;
}

template <typename Q>
Q Saturate(double v) {
  const double lo = static_cast<double>(std::numeric_limits<Q>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<Q>::max());
  if (std::isnan(v)) return Q(0);
  return static_cast<Q>(std::clamp(v, lo, hi));
}

template <typename F>
absl::Status DispatchQuant(DType d, F&& f) {
  switch (d) {
    case DType::kInt8:
      return CallTyped(f, Tag<int8_t>{});
    case DType::kUint8:
      return CallTyped(f, Tag<uint8_t>{});
    case DType::kInt16:
      return CallTyped(f, Tag<int16_t>{});
    case DType::kUint16:
      return CallTyped(f, Tag<uint16_t>{});
    case DType::kInt32:
      return CallTyped(f, Tag<int32_t>{});
    default:
      return UnsupportedDType("int8/uint8/int16/uint16/int32", d);
  }
}

}  // namespace

void RegisterQuantize(KernelRegistry& r) {
  r.Register(
      "QuantizeLinear",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis = info.node.GetInt("axis", 1);
        return MakeKernel([axis](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const Tensor& scale = *ctx.input(1);
          const Tensor* zp = ctx.input(2);
          if (x.dtype() != DType::kFloat || scale.dtype() != DType::kFloat) {
            return absl::UnimplementedError(
                "QuantizeLinear supports float input and scale");
          }
          ASSIGN_OR_RETURN(AxisLayout l, Layout(ctx, x, scale, axis));
          if (zp != nullptr && zp->num_elements() != scale.num_elements()) {
            return ctx.Error("zero_point and scale differ in size");
          }
          const DType qt = zp ? zp->dtype() : DType::kUint8;
          return DispatchQuant(qt, [&]<typename Q>(Tag<Q>) -> absl::Status {
            ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, qt, x.shape()));
            const float* in = x.data<float>();
            const float* s = scale.data<float>();
            const Q* z = zp ? zp->data<Q>() : nullptr;
            Q* out = y->mutable_data<Q>();
            for (int64_t i = 0; i < x.num_elements(); ++i) {
              const int64_t c = (i / l.inner) % l.count;
              const double v =
                  std::nearbyint(static_cast<double>(in[i] / s[c])) +
                  (z ? static_cast<double>(z[c]) : 0.0);
              out[i] = Saturate<Q>(v);
            }
            return absl::OkStatus();
          });
        });
      });
  r.Register(
      "DequantizeLinear",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis = info.node.GetInt("axis", 1);
        return MakeKernel([axis](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const Tensor& scale = *ctx.input(1);
          const Tensor* zp = ctx.input(2);
          if (scale.dtype() != DType::kFloat) {
            return absl::UnimplementedError(
                "DequantizeLinear supports float scale");
          }
          ASSIGN_OR_RETURN(AxisLayout l, Layout(ctx, x, scale, axis));
          if (zp != nullptr && (zp->num_elements() != scale.num_elements() ||
                                zp->dtype() != x.dtype())) {
            return ctx.Error("zero_point must match scale size and input type");
          }
          return DispatchQuant(
              x.dtype(), [&]<typename Q>(Tag<Q>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, DType::kFloat, x.shape()));
                const Q* in = x.data<Q>();
                const float* s = scale.data<float>();
                const Q* z = zp ? zp->data<Q>() : nullptr;
                float* out = y->mutable_data<float>();
                for (int64_t i = 0; i < x.num_elements(); ++i) {
                  const int64_t c = (i / l.inner) % l.count;
                  const int64_t zv = z ? static_cast<int64_t>(z[c]) : 0;
                  out[i] =
                      static_cast<float>(static_cast<int64_t>(in[i]) - zv) *
                      s[c];
                }
                return absl::OkStatus();
              });
        });
      });
  r.Register(
      "DynamicQuantizeLinear",
      [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.dtype() != DType::kFloat)
            return ctx.Error("input must be float");
          float lo = 0, hi = 0;
          for (float v : x.span<float>()) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
          }
          const float scale = (hi - lo) / 255.0f;
          const float zpf = scale == 0 ? 0.0f : std::nearbyint(-lo / scale);
          const uint8_t zp = Saturate<uint8_t>(zpf);
          ASSIGN_OR_RETURN(Tensor * y,
                           ctx.Allocate(0, DType::kUint8, x.shape()));
          uint8_t* out = y->mutable_data<uint8_t>();
          const float* in = x.data<float>();
          for (int64_t i = 0; i < x.num_elements(); ++i) {
            out[i] =
                scale == 0
                    ? zp
                    : Saturate<uint8_t>(std::nearbyint(in[i] / scale) + zp);
          }
          ASSIGN_OR_RETURN(Tensor * s, ctx.Allocate(1, DType::kFloat, {}));
          s->mutable_data<float>()[0] = scale;
          ASSIGN_OR_RETURN(Tensor * z, ctx.Allocate(2, DType::kUint8, {}));
          z->mutable_data<uint8_t>()[0] = zp;
          return absl::OkStatus();
        });
      });
}

}  // namespace quantd::exec
