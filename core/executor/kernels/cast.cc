// Cast: y = (to) x. Float -> integer truncates toward zero and saturates
// (NaN -> 0) so that untrusted values cannot trigger undefined behaviour;
// float16/bfloat16 round to nearest even.
#include <cmath>
#include <limits>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/half.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> &&
                       std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    const double t = std::trunc(static_cast<double>(v));
    if (t <= static_cast<double>(std::numeric_limits<To>::lowest())) {
      return std::numeric_limits<To>::lowest();
    }
    if (t >= static_cast<double>(std::numeric_limits<To>::max())) {
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(t);
  } else {
    return static_cast<To>(v);
  }
}

// Reads element i of x as double-free "wide" value via a typed visitor.
absl::Status CastTensor(const Tensor& x, DType to, Tensor* y) {
  const int64_t n = x.num_elements();
  // Half types go through float.
  if (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBfloat16) {
    Tensor f(DType::kFloat, x.shape());
    const uint16_t* p = static_cast<const uint16_t*>(x.raw());
    float* q = f.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) {
      q[i] = x.dtype() == DType::kFloat16 ? HalfToFloat(p[i])
                                          : Bfloat16ToFloat(p[i]);
    }
    return CastTensor(f, to, y);
  }
  if (to == DType::kFloat16 || to == DType::kBfloat16) {
    uint16_t* q = static_cast<uint16_t*>(y->mutable_raw());
    return DispatchAll(x.dtype(), [&]<typename T>(Tag<T>) {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(p[i]);
        q[i] = to == DType::kFloat16 ? FloatToHalf(v) : FloatToBfloat16(v);
      }
    });
  }
  return DispatchAll(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    return DispatchAll(to, [&]<typename U>(Tag<U>) {
      const T* p = x.data<T>();
      U* q = y->mutable_data<U>();
      for (int64_t i = 0; i < n; ++i) q[i] = Convert<U>(p[i]);
    });
  });
}

}  // namespace

absl::Status CastTo(const Tensor& x, DType to, Tensor* y) {
  return CastTensor(x, to, y);
}

void RegisterCast(KernelRegistry& r) {
  r.Register(
      "Cast",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        if (!info.node.HasAttribute("to")) return info.Error("missing 'to'");
        const DType to = static_cast<DType>(info.node.GetInt("to", 0));
        if (!IsStorableDType(to)) {
          return absl::UnimplementedError(
              absl::StrCat(info.node.Label(), ": cast to ", DTypeName(to),
                           " is not supported"));
        }
        return MakeKernel([to](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.dtype() == to) {
            ctx.SetOutput(0, x);
            return absl::OkStatus();
          }
          ASSIGN_OR_RETURN(Tensor * y,
                           ctx.AllocateUninitialized(0, to, x.shape()));
          return CastTensor(x, to, y);
        });
      });
  // CastLike: cast input 0 to the type of input 1.
  r.Register("CastLike",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel([](KernelContext& ctx) -> absl::Status {
                 const Tensor& x = *ctx.input(0);
                 const DType to = ctx.input(1)->dtype();
                 if (x.dtype() == to) {
                   ctx.SetOutput(0, x);
                   return absl::OkStatus();
                 }
                 ASSIGN_OR_RETURN(Tensor * y,
                                  ctx.AllocateUninitialized(0, to, x.shape()));
                 return CastTensor(x, to, y);
               });
             });
}

}  // namespace quantd::exec
