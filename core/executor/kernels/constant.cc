// Constant (value / value_float(s) / value_int(s)), ConstantOfShape
// (y[shape] = value, default float 0), Range (len = max(ceil((limit -
// start) / delta), 0)) and the Hann/Hamming/Blackman window generators.
#include <cmath>
#include <utility>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterConstant(KernelRegistry& r) {
  r.Register(
      "Constant",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const Node& n = info.node;
        Tensor value;
        if (const Attribute* a = n.FindAttribute("value");
            a && a->t.defined()) {
          value = a->t;
        } else if (const Attribute* a = n.FindAttribute("value_float")) {
          value = Tensor::FromVector<float>({a->f}, {});
        } else if (const Attribute* a = n.FindAttribute("value_floats")) {
          value = Tensor::FromVector<float>(
              a->floats, {static_cast<int64_t>(a->floats.size())});
        } else if (const Attribute* a = n.FindAttribute("value_int")) {
          value = Tensor::FromVector<int64_t>({a->i}, {});
        } else if (const Attribute* a = n.FindAttribute("value_ints")) {
          value = Tensor::FromVector<int64_t>(
              a->ints, {static_cast<int64_t>(a->ints.size())});
        } else {
          return absl::UnimplementedError(
              absl::StrCat(n.Label(),
                           ": only tensor, float(s) and int(s) constants are "
                           "supported"));
        }
        return MakeKernel([value](KernelContext& ctx) {
          ctx.SetOutput(0, value);
          return absl::OkStatus();
        });
      });
  r.Register(
      "ConstantOfShape",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        Tensor value = Tensor::FromVector<float>({0.0f}, {1});
        if (const Attribute* a = info.node.FindAttribute("value");
            a && a->t.defined()) {
          if (a->t.num_elements() != 1)
            return info.Error("value must have one element");
          value = a->t;
        }
        return MakeKernel([value](KernelContext& ctx) -> absl::Status {
          ASSIGN_OR_RETURN(auto shape, ReadInts(*ctx.input(0), "shape"));
          for (int64_t d : shape) {
            if (d < 0) return ctx.Error("negative dim in shape");
          }
          ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, value.dtype(), shape));
          return DispatchBySize(value.dtype(), [&]<typename T>(Tag<T>) {
            const T v = RawAs<T>(value)[0];
            T* out = MutableRawAs<T>(*y);
            for (int64_t i = 0; i < y->num_elements(); ++i) out[i] = v;
          });
        });
      });
}

void RegisterRange(KernelRegistry& r) {
  r.Register(
      "Range",
      [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& s = *ctx.input(0);
          const Tensor& l = *ctx.input(1);
          const Tensor& d = *ctx.input(2);
          if (s.dtype() != l.dtype() || s.dtype() != d.dtype()) {
            return ctx.Error("start, limit and delta types differ");
          }
          if (s.num_elements() != 1 || l.num_elements() != 1 ||
              d.num_elements() != 1) {
            return ctx.Error("start, limit and delta must be scalars");
          }
          return DispatchNumeric(
              s.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                const T start = s.data<T>()[0];
                const T limit = l.data<T>()[0];
                const T delta = d.data<T>()[0];
                if (delta == T(0)) return ctx.Error("delta is 0");
                const double len = std::ceil(
                    (static_cast<double>(limit) - static_cast<double>(start)) /
                    static_cast<double>(delta));
                if (!(len < 1e12)) {
                  if (len > 0 || std::isnan(len))
                    return ctx.Error("range too long");
                }
                const int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
                ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, s.dtype(), {n}));
                T* out = y->mutable_data<T>();
                for (int64_t i = 0; i < n; ++i) {
                  out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
                }
                return absl::OkStatus();
              });
        });
      });
  // Hann, Hamming and Blackman windows of `size` points (periodic: the
  // period is size, else size - 1), as ONNX's reference computes them.
  const std::pair<const char*, int> windows[] = {
      {"HannWindow", 0}, {"HammingWindow", 1}, {"BlackmanWindow", 2}};
  for (const auto& [name, kind_v] : windows) {
    const int kind = kind_v;
    r.Register(
        name,
        [kind](
            const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
          const bool periodic = info.node.GetInt("periodic", 1) != 0;
          const DType dtype =
              static_cast<DType>(info.node.GetInt("output_datatype", 1));
          return MakeKernel([kind, periodic,
                             dtype](KernelContext& ctx) -> absl::Status {
            ASSIGN_OR_RETURN(double size_v, ReadScalar(*ctx.input(0), "size"));
            if (!(size_v >= 0) || size_v > 1e9) {
              return ctx.Error(
                  absl::StrCat("size ", size_v, " must be in [0, 1e9]"));
            }
            const int64_t n = static_cast<int64_t>(size_v);
            const double period = periodic ? n : n - 1;
            return DispatchNumeric(
                dtype, [&]<typename T>(Tag<T>) -> absl::Status {
                  ASSIGN_OR_RETURN(Tensor * y,
                                   ctx.AllocateUninitialized(0, dtype, {n}));
                  T* out = y->mutable_data<T>();
                  for (int64_t i = 0; i < n; ++i) {
                    const double a = 2 * M_PI * i / period;
                    double v;
                    if (kind == 0) {
                      const double h = std::sin(M_PI * i / period);
                      v = h * h;
                    } else if (kind == 1) {
                      v = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
                    } else {
                      v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
                    }
                    out[i] = static_cast<T>(v);
                  }
                  return absl::OkStatus();
                });
          });
        });
  }
}

}  // namespace quantd::exec
