// Unary element-wise ops (activations and math functions).
#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "core/executor/elementwise.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

template <typename Op>
absl::Status ComputeFloatUnary(KernelContext& ctx, const Op& op) {
  const Tensor& x = *ctx.input(0);
  return DispatchFloat(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    return UnarySameType<T>(ctx, [op](T v) { return static_cast<T>(op(v)); });
  });
}

// Registers a float-only unary op; make_op(info) returns the scalar functor
// (a generic lambda) after reading attributes.
template <typename MakeOp>
void RegisterFloatUnary(KernelRegistry& r, const char* name, MakeOp make_op) {
  r.Register(
      name,
      [make_op](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        auto op = make_op(info);
        return MakeKernel(
            [op](KernelContext& ctx) { return ComputeFloatUnary(ctx, op); });
      });
}

// Same, but float tensors go through an Eigen array function (vectorised
// exp/tanh/logistic; within a few ulp of libm) chunk by chunk; doubles use
// the scalar op. Chunks depend on the size only, so threads do not change
// results.
template <typename MakeOp, typename FloatChunk>
void RegisterVectorUnary(KernelRegistry& r, const char* name, MakeOp make_op,
                         FloatChunk chunk) {
  r.Register(
      name,
      [make_op, chunk](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        auto op = make_op(info);
        return MakeKernel([op, chunk](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.dtype() != DType::kFloat) return ComputeFloatUnary(ctx, op);
          // Over the input's own buffer when donated: Eigen's
          // coefficient-wise ops read each coefficient before writing it.
          Tensor* donated = ctx.DonatedInput(0);
          Tensor* y = donated;
          if (y == nullptr) {
            ASSIGN_OR_RETURN(
                y, ctx.AllocateUninitialized(0, x.dtype(), x.shape()));
          }
          float* out = y->mutable_data<float>();
          const float* in = donated != nullptr ? out : x.data<float>();
          ParallelFor(ctx.pool(), y->num_elements(), kElementGrain,
                      [&](int64_t b, int64_t e) {
                        Eigen::Map<const Eigen::ArrayXf> xi(in + b, e - b);
                        Eigen::Map<Eigen::ArrayXf> yo(out + b, e - b);
                        chunk(xi, yo);
                      });
          if (donated != nullptr) ctx.SetOutput(0, std::move(*donated));
          return absl::OkStatus();
        });
      });
}

// Same for ops defined on every numeric type (Abs, Neg, Relu, Sign).
template <typename MakeOp>
void RegisterNumericUnary(KernelRegistry& r, const char* name, MakeOp make_op) {
  r.Register(
      name,
      [make_op](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        auto op = make_op(info);
        return MakeKernel([op](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          return DispatchNumeric(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                return UnarySameType<T>(ctx, [op](T v) { return op(v); });
              });
        });
      });
}

template <typename T>
T Erf(T v) {
  return std::erf(v);
}

// Relu, Abs, Neg, Sign: every numeric dtype.
void RegisterNumericUnaryOps(KernelRegistry& r) {
  // y = max(x, 0)
  RegisterNumericUnary(r, "Relu", [](const KernelInfo&) {
    return []<typename T>(T v) { return v > T(0) ? v : T(0); };
  });
  // y = |x|
  RegisterNumericUnary(r, "Abs", [](const KernelInfo&) {
    return []<typename T>(T v) {
      if constexpr (std::is_unsigned_v<T>) {
        return v;
      } else {
        return v < T(0) ? static_cast<T>(-v) : v;
      }
    };
  });
  // y = -x
  RegisterNumericUnary(r, "Neg", [](const KernelInfo&) {
    return []<typename T>(T v) { return static_cast<T>(-v); };
  });
  // y = sign(x) in {-1, 0, 1}
  RegisterNumericUnary(r, "Sign", [](const KernelInfo&) {
    return []<typename T>(T v) {
      return static_cast<T>(v > T(0) ? 1 : (v < T(0) ? -1 : 0));
    };
  });
}

// Float activations, LeakyRelu to Mish.
void RegisterActivationFunctions(KernelRegistry& r) {
  // y = x >= 0 ? x : alpha * x
  RegisterFloatUnary(r, "LeakyRelu", [](const KernelInfo& info) {
    const float alpha = info.node.GetFloat("alpha", 0.01f);
    // max(v, 0) + alpha * min(v, 0) equals the select exactly (incl. -0 and
    // NaN) but has no branch: GCC will not speculate the multiply of the
    // select form (it may trap), which then stays scalar and mispredicts.
    return [alpha]<typename T>(T v) {
      return std::max(v, T(0)) + static_cast<T>(alpha) * std::min(v, T(0));
    };
  });
  // y = 1 / (1 + exp(-x))
  RegisterVectorUnary(
      r, "Sigmoid",
      [](const KernelInfo&) {
        return []<typename T>(T v) {
          return v >= T(0) ? T(1) / (T(1) + std::exp(-v))
                           : std::exp(v) / (T(1) + std::exp(v));
        };
      },
      [](const auto& xi, auto& yo) { yo = xi.logistic(); });
  // y = tanh(x)
  RegisterVectorUnary(
      r, "Tanh",
      [](const KernelInfo&) {
        return []<typename T>(T v) { return std::tanh(v); };
      },
      [](const auto& xi, auto& yo) { yo = xi.tanh(); });
  // y = max(0, min(1, alpha * x + beta))
  RegisterFloatUnary(r, "HardSigmoid", [](const KernelInfo& info) {
    const float alpha = info.node.GetFloat("alpha", 0.2f);
    const float beta = info.node.GetFloat("beta", 0.5f);
    return [alpha, beta]<typename T>(T v) {
      return std::max(T(0), std::min(T(1), static_cast<T>(alpha) * v +
                                               static_cast<T>(beta)));
    };
  });
  // y = x * max(0, min(1, x / 6 + 0.5)), as ONNX Runtime computes it (the
  // runtime the exported model meets). Near x = -3/2 float32 gives
  // -0.37500003, below the true minimum -3/8: shift-negative correction
  // clamps to the latter (shift_negative.cc), as torch's x*clamp(x+3,0,6)/6
  // never goes below it.
  RegisterFloatUnary(r, "HardSwish", [](const KernelInfo&) {
    return []<typename T>(T v) {
      return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
    };
  });
  // y = x >= 0 ? x : alpha * (exp(x) - 1)
  RegisterFloatUnary(r, "Elu", [](const KernelInfo& info) {
    const float alpha = info.node.GetFloat("alpha", 1.0f);
    return [alpha]<typename T>(T v) {
      return v >= T(0) ? v : static_cast<T>(alpha) * (std::exp(v) - T(1));
    };
  });
  // y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  RegisterFloatUnary(r, "Celu", [](const KernelInfo& info) {
    const float alpha = info.node.GetFloat("alpha", 1.0f);
    return [alpha]<typename T>(T v) {
      const T a = static_cast<T>(alpha);
      return std::max(T(0), v) + std::min(T(0), a * (std::exp(v / a) - T(1)));
    };
  });
  // y = gamma * (x > 0 ? x : alpha * (exp(x) - 1))
  RegisterFloatUnary(r, "Selu", [](const KernelInfo& info) {
    const float alpha = info.node.GetFloat("alpha", 1.67326319217681884765625f);
    const float gamma = info.node.GetFloat("gamma", 1.05070102214813232421875f);
    return [alpha, gamma]<typename T>(T v) {
      return static_cast<T>(gamma) *
             (v > T(0) ? v : static_cast<T>(alpha) * (std::exp(v) - T(1)));
    };
  });
  // y = x >= 0 ? x : alpha * (exp(x) - 1), ThresholdedRelu: x > alpha ? x : 0
  RegisterFloatUnary(r, "ThresholdedRelu", [](const KernelInfo& info) {
    const float alpha = info.node.GetFloat("alpha", 1.0f);
    return [alpha]<typename T>(T v) {
      return v > static_cast<T>(alpha) ? v : T(0);
    };
  });
  // none: y = 0.5x(1 + erf(x/sqrt2)); tanh: 0.5x(1 + tanh(sqrt(2/pi)(x +
  // 0.044715x^3)))
  RegisterFloatUnary(r, "Gelu", [](const KernelInfo& info) {
    const bool tanh_approx =
        info.node.GetString("approximate", "none") == "tanh";
    return [tanh_approx]<typename T>(T v) {
      if (tanh_approx) {
        const T k = static_cast<T>(0.7978845608028654);
        return T(0.5) * v *
               (T(1) + std::tanh(k * (v + T(0.044715) * v * v * v)));
      }
      return T(0.5) * v * (T(1) + std::erf(v * static_cast<T>(M_SQRT1_2)));
    };
  });
  // y = log(1 + exp(x))
  RegisterFloatUnary(r, "Softplus", [](const KernelInfo&) {
    return []<typename T>(T v) {
      return v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    };
  });
  // y = x / (1 + |x|)
  RegisterFloatUnary(r, "Softsign", [](const KernelInfo&) {
    return []<typename T>(T v) { return v / (T(1) + std::abs(v)); };
  });
  // y = x * tanh(softplus(x))
  RegisterFloatUnary(r, "Mish", [](const KernelInfo&) {
    return []<typename T>(T v) {
      const T sp =
          v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
      return v * std::tanh(sp);
    };
  });
}

// Float elementwise math: Erf, Sqrt, Exp, Log, rounding, trigonometry.
void RegisterMathFunctions(KernelRegistry& r) {
  RegisterFloatUnary(r, "Erf", [](const KernelInfo&) {
    return []<typename T>(T v) { return Erf(v); };
  });
  RegisterFloatUnary(r, "Sqrt", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::sqrt(v); };
  });
  RegisterVectorUnary(
      r, "Exp",
      [](const KernelInfo&) {
        return []<typename T>(T v) { return std::exp(v); };
      },
      [](const auto& xi, auto& yo) { yo = xi.exp(); });
  RegisterFloatUnary(r, "Log", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::log(v); };
  });
  RegisterFloatUnary(r, "Reciprocal", [](const KernelInfo&) {
    return []<typename T>(T v) { return T(1) / v; };
  });
  RegisterFloatUnary(r, "Floor", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::floor(v); };
  });
  RegisterFloatUnary(r, "Ceil", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::ceil(v); };
  });
  // Round half to even, as numpy.
  RegisterFloatUnary(r, "Round", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::nearbyint(v); };
  });
  RegisterFloatUnary(r, "Sin", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::sin(v); };
  });
  RegisterFloatUnary(r, "Cos", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::cos(v); };
  });
  RegisterFloatUnary(r, "Tan", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::tan(v); };
  });
  RegisterFloatUnary(r, "Asin", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::asin(v); };
  });
  RegisterFloatUnary(r, "Acos", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::acos(v); };
  });
  RegisterFloatUnary(r, "Atan", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::atan(v); };
  });
  RegisterFloatUnary(r, "Sinh", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::sinh(v); };
  });
  RegisterFloatUnary(r, "Cosh", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::cosh(v); };
  });
  RegisterFloatUnary(r, "Asinh", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::asinh(v); };
  });
  RegisterFloatUnary(r, "Acosh", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::acosh(v); };
  });
  RegisterFloatUnary(r, "Atanh", [](const KernelInfo&) {
    return []<typename T>(T v) { return std::atanh(v); };
  });
}

// Not, Shrink, IsInf, IsNaN.
void RegisterMasksAndShrink(KernelRegistry& r) {
  // Not: y = !x (bool)
  r.Register("Not",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel([](KernelContext& ctx) -> absl::Status {
                 const Tensor& x = *ctx.input(0);
                 if (x.dtype() != DType::kBool) {
                   return ctx.Error(
                       absl::StrCat("expects bool, got ", x.DebugString()));
                 }
                 ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                  0, DType::kBool, x.shape()));
                 UnaryLoop(ctx.pool(), x.data<bool>(), y->mutable_data<bool>(),
                           x.num_elements(), [](bool v) { return !v; });
                 return absl::OkStatus();
               });
             });
  // y = x < -lambd ? x + bias : (x > lambd ? x - bias : 0)
  RegisterFloatUnary(r, "Shrink", [](const KernelInfo& info) {
    const float lambd = info.node.GetFloat("lambd", 0.5f);
    const float bias = info.node.GetFloat("bias", 0.0f);
    return [lambd, bias]<typename T>(T v) {
      const T l = static_cast<T>(lambd), b = static_cast<T>(bias);
      return v < -l ? v + b : (v > l ? v - b : T(0));
    };
  });
  r.Register(
      "IsInf",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool neg = info.node.GetInt("detect_negative", 1) != 0;
        const bool pos = info.node.GetInt("detect_positive", 1) != 0;
        return MakeKernel([neg, pos](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, DType::kBool, x.shape()));
                UnaryLoop(ctx.pool(), x.data<T>(), y->mutable_data<bool>(),
                          x.num_elements(), [neg, pos](T v) {
                            return std::isinf(v) &&
                                   ((v > 0 && pos) || (v < 0 && neg));
                          });
                return absl::OkStatus();
              });
        });
      });
  // IsNaN / IsInf: bool masks.
  r.Register(
      "IsNaN",
      [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, DType::kBool, x.shape()));
                UnaryLoop(ctx.pool(), x.data<T>(), y->mutable_data<bool>(),
                          x.num_elements(), [](T v) { return std::isnan(v); });
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace

void RegisterActivations(KernelRegistry& r) {
  RegisterNumericUnaryOps(r);
  RegisterActivationFunctions(r);
  RegisterMathFunctions(r);
  RegisterMasksAndShrink(r);
}

}  // namespace quantd::exec
