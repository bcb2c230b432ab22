// Binary element-wise ops with numpy broadcasting: arithmetic, comparisons,
// logic, PRelu, BitShift.
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/executor/elementwise.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Out { kSame, kBool };

// Integer arithmetic wraps (two's complement) as in ONNX Runtime instead of
// being undefined on overflow; INT_MIN / -1 (a hardware trap) wraps too.
template <typename T>
constexpr bool kWideSigned = std::is_integral_v<T>&& std::is_signed_v<T> &&
                             sizeof(T) >= 4;

template <typename T, typename Op>
T Wrapped(T x, T y, Op op) {
  if constexpr (kWideSigned<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(x), static_cast<U>(y)));
  } else {
    return static_cast<T>(op(x, y));
  }
}

// Before opset 7 broadcasting was opt-in (broadcast=1) and B aligned at
// `axis` of A (suffix when axis is absent).
struct LegacyBroadcast {
  bool enabled = false;
  int64_t axis = -1;
  bool has_axis = false;
};

LegacyBroadcast ReadLegacy(const KernelInfo& info) {
  LegacyBroadcast lb;
  if (info.opset < 7) {
    lb.enabled = info.node.GetInt("broadcast", 0) != 0;
    lb.has_axis = info.node.HasAttribute("axis");
    lb.axis = info.node.GetInt("axis", -1);
  }
  return lb;
}

absl::StatusOr<std::vector<int64_t>> OutShape(const KernelContext& ctx,
                                              const LegacyBroadcast& lb,
                                              const Tensor& a, const Tensor& b,
                                              std::vector<int64_t>* b_shape) {
  *b_shape = b.shape();
  if (lb.enabled && lb.has_axis) {
    const int64_t axis = lb.axis < 0 ? lb.axis + a.rank() : lb.axis;
    const int64_t trailing = a.rank() - axis - b.rank();
    if (axis < 0 || trailing < 0) {
      return ctx.Error(absl::StrCat("legacy broadcast of ", b.DebugString(),
                                    " at axis ", lb.axis, " into ",
                                    a.DebugString()));
    }
    b_shape->insert(b_shape->end(), trailing, 1);
  }
  absl::StatusOr<std::vector<int64_t>> out =
      BroadcastShape(a.shape(), *b_shape);
  if (!out.ok()) return ctx.Error(out.status().message());
  return out;
}

// The element types an op accepts. A compile-time choice, so that each op
// instantiates its loops for those types only: with a run-time choice every
// op was compiled for all eleven (bool arithmetic included), and this file
// took a minute to compile in every tree.
enum class Accepts { kNumeric, kNumericAndBool, kBool, kUnsigned };

template <Accepts kAccepts, typename F>
absl::Status DispatchAccepted(DType dtype, F&& f) {
  if constexpr (kAccepts == Accepts::kNumeric) {
    return DispatchNumeric(dtype, f);
  } else if constexpr (kAccepts == Accepts::kNumericAndBool) {
    return DispatchAll(dtype, f);
  } else if constexpr (kAccepts == Accepts::kBool) {
    if (dtype == DType::kBool) return CallTyped(f, Tag<bool>{});
    return UnsupportedDType("bool", dtype);
  } else {
    return DispatchUnsigned(dtype, f);
  }
}

template <Accepts kAccepts, typename Op>
absl::Status RunBinary(KernelContext& ctx, const LegacyBroadcast& lb,
                       Out out_kind, Op op) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype() != b.dtype()) {
    return ctx.Error(absl::StrCat("input types differ: ", a.DebugString(),
                                  " vs ", b.DebugString()));
  }
  std::vector<int64_t> b_shape;
  ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                   OutShape(ctx, lb, a, b, &b_shape));
  const BroadcastPlan plan(shape, {a.shape(), b_shape});
  auto body = [&]<typename T>(Tag<T>) -> absl::Status {
    using R = std::conditional_t<std::is_same_v<decltype(op(T(), T())), bool>,
                                 bool, T>;
    const DType rd = out_kind == Out::kBool ? DType::kBool : a.dtype();
    auto f = [&](T x, T z) { return static_cast<R>(op(x, z)); };
    if constexpr (std::is_same_v<R, T> && kRunsInPlace<T>) {
      // Over an operand of the output's shape that the executor donated:
      // element i is read before it is written, and no other element is.
      for (int k : {0, 1}) {
        if (rd != a.dtype() || ctx.input(k)->shape() != shape) continue;
        Tensor* d = ctx.DonatedInput(k);
        if (d == nullptr) continue;
        T* out = d->mutable_data<T>();
        if (k == 0) {
          BinaryLoopInPlace<0>(ctx.pool(), plan, out, b.data<T>(), f);
        } else {
          BinaryLoopInPlace<1>(ctx.pool(), plan, out, a.data<T>(), f);
        }
        ctx.SetOutput(0, std::move(*d));
        return absl::OkStatus();
      }
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(0, rd, shape));
    BinaryLoop(ctx.pool(), plan, a.data<T>(), b.data<T>(), y->mutable_data<R>(),
               f);
    return absl::OkStatus();
  };
  return DispatchAccepted<kAccepts>(a.dtype(), body);
}

template <Accepts kAccepts, typename MakeOp>
void RegisterBinary(KernelRegistry& r, const char* name, Out out_kind,
                    MakeOp make_op) {
  r.Register(
      name,
      [=](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const LegacyBroadcast lb = ReadLegacy(info);
        auto op = make_op(info);
        return MakeKernel([=](KernelContext& ctx) {
          return RunBinary<kAccepts>(ctx, lb, out_kind, op);
        });
      });
}

// Integer division by zero is undefined behaviour in C++: reject it first.
absl::Status CheckIntDivisor(const KernelContext& ctx) {
  const Tensor& b = *ctx.input(1);
  return DispatchAll(b.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    if constexpr (!std::is_floating_point_v<T>) {
      for (T v : b.span<T>()) {
        if (v == T(0)) return ctx.Error("integer division by zero");
      }
    }
    return absl::OkStatus();
  });
}

// Add, Sub, Mul, Div, Mod.
void RegisterArithmetic(KernelRegistry& r) {
  // C = A + B
  RegisterBinary<Accepts::kNumeric>(
      r, "Add", Out::kSame, [](const KernelInfo&) {
        return []<typename T>(T x, T y) {
          return Wrapped(x, y, [](auto a, auto b) { return a + b; });
        };
      });
  // C = A - B
  RegisterBinary<Accepts::kNumeric>(
      r, "Sub", Out::kSame, [](const KernelInfo&) {
        return []<typename T>(T x, T y) {
          return Wrapped(x, y, [](auto a, auto b) { return a - b; });
        };
      });
  // C = A * B
  RegisterBinary<Accepts::kNumeric>(
      r, "Mul", Out::kSame, [](const KernelInfo&) {
        return []<typename T>(T x, T y) {
          return Wrapped(x, y, [](auto a, auto b) { return a * b; });
        };
      });
  // C = A / B (integers truncate toward zero)
  r.Register(
      "Div",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const LegacyBroadcast lb = ReadLegacy(info);
        return MakeKernel([lb](KernelContext& ctx) -> absl::Status {
          RETURN_IF_ERROR(CheckIntDivisor(ctx));
          return RunBinary<Accepts::kNumeric>(
              ctx, lb, Out::kSame, []<typename T>(T x, T y) {
                if constexpr (kWideSigned<T>) {
                  if (y == T(-1)) {
                    return Wrapped(T(0), x,
                                   [](auto a, auto b) { return a - b; });
                  }
                }
                return static_cast<T>(x / y);
              });
        });
      });
  // fmod=0: result takes the divisor's sign (integers); fmod=1: C fmod.
  r.Register(
      "Mod",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool fmod = info.node.GetInt("fmod", 0) != 0;
        return MakeKernel([fmod](KernelContext& ctx) -> absl::Status {
          RETURN_IF_ERROR(CheckIntDivisor(ctx));
          return RunBinary<Accepts::kNumeric>(
              ctx, {}, Out::kSame, [fmod]<typename T>(T x, T y) -> T {
                if constexpr (std::is_floating_point_v<T>) {
                  if (fmod) return std::fmod(x, y);
                  T m = std::fmod(x, y);
                  if (m != T(0) && ((m < 0) != (y < 0))) m += y;
                  return m;
                } else {
                  if constexpr (kWideSigned<T>) {
                    if (y == T(-1)) return T(0);
                  }
                  T m = static_cast<T>(x % y);
                  if (!fmod && m != 0 && ((m < 0) != (y < 0))) {
                    m = static_cast<T>(m + y);
                  }
                  return m;
                }
              });
        });
      });
}

// Comparisons and logical ops: bool outputs.
void RegisterComparisonsAndLogic(KernelRegistry& r) {
  RegisterBinary<Accepts::kNumericAndBool>(
      r, "Equal", Out::kBool, [](const KernelInfo&) {
        return []<typename T>(T x, T y) { return x == y; };
      });
  RegisterBinary<Accepts::kNumeric>(
      r, "Less", Out::kBool, [](const KernelInfo&) {
        return []<typename T>(T x, T y) { return x < y; };
      });
  RegisterBinary<Accepts::kNumeric>(
      r, "LessOrEqual", Out::kBool, [](const KernelInfo&) {
        return []<typename T>(T x, T y) { return x <= y; };
      });
  RegisterBinary<Accepts::kNumeric>(
      r, "Greater", Out::kBool, [](const KernelInfo&) {
        return []<typename T>(T x, T y) { return x > y; };
      });
  RegisterBinary<Accepts::kNumeric>(
      r, "GreaterOrEqual", Out::kBool, [](const KernelInfo&) {
        return []<typename T>(T x, T y) { return x >= y; };
      });
  RegisterBinary<Accepts::kBool>(r, "And", Out::kBool, [](const KernelInfo&) {
    return []<typename T>(T x, T y) { return static_cast<bool>(x && y); };
  });
  RegisterBinary<Accepts::kBool>(r, "Or", Out::kBool, [](const KernelInfo&) {
    return []<typename T>(T x, T y) { return static_cast<bool>(x || y); };
  });
  RegisterBinary<Accepts::kBool>(r, "Xor", Out::kBool, [](const KernelInfo&) {
    return []<typename T>(T x, T y) { return static_cast<bool>(x != y); };
  });
}

// PRelu, Pow, BitShift.
void RegisterPReluPowBitShift(KernelRegistry& r) {
  // y = x < 0 ? slope * x : x (slope broadcasts to x)
  r.Register(
      "PRelu",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const Tensor& slope = *ctx.input(1);
          std::vector<int64_t> s_shape = slope.shape();
          absl::StatusOr<std::vector<int64_t>> shape =
              BroadcastShape(x.shape(), s_shape);
          // A [C] slope of old exporters means per channel (axis 1).
          if ((!shape.ok() || *shape != x.shape()) && s_shape.size() == 1 &&
              x.rank() >= 2 && s_shape[0] == x.dim(1)) {
            s_shape.insert(s_shape.end(), x.rank() - 2, 1);
            shape = BroadcastShape(x.shape(), s_shape);
          }
          if (!shape.ok() || *shape != x.shape()) {
            return ctx.Error(absl::StrCat("slope ", slope.DebugString(),
                                          " does not broadcast to ",
                                          x.DebugString()));
          }
          if (slope.dtype() != x.dtype()) {
            return ctx.Error("slope type differs from input type");
          }
          const BroadcastPlan plan(x.shape(), {x.shape(), s_shape});
          return DispatchNumeric(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, x.dtype(), x.shape()));
                BinaryLoop(ctx.pool(), plan, x.data<T>(), slope.data<T>(),
                           y->mutable_data<T>(), [](T v, T s) {
                             return v < T(0) ? static_cast<T>(s * v) : v;
                           });
                return absl::OkStatus();
              });
        });
      });
  // Z = X ^ Y; Y may have another numeric type.
  r.Register(
      "Pow",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const LegacyBroadcast lb = ReadLegacy(info);
        return MakeKernel([lb](KernelContext& ctx) -> absl::Status {
          const Tensor& a = *ctx.input(0);
          const Tensor& b = *ctx.input(1);
          std::vector<int64_t> b_shape;
          ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                           OutShape(ctx, lb, a, b, &b_shape));
          const BroadcastPlan plan(shape, {a.shape(), b_shape});
          // The exponents as double first (exact for every type but 64-bit
          // integers beyond 2^53, which give 0, 1 or inf either way): one
          // loop per base type instead of one per pair of types, ~100
          // instantiations fewer to compile.
          std::vector<double> exponents(b.num_elements());
          RETURN_IF_ERROR(DispatchNumeric(b.dtype(), [&]<typename U>(Tag<U>) {
            const U* e = b.data<U>();
            for (size_t i = 0; i < exponents.size(); ++i) {
              exponents[i] = static_cast<double>(e[i]);
            }
            return absl::OkStatus();
          }));
          return DispatchNumeric(
              a.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(
                    Tensor * y, ctx.AllocateUninitialized(0, a.dtype(), shape));
                BinaryLoop(
                    ctx.pool(), plan, a.data<T>(), exponents.data(),
                    y->mutable_data<T>(), [](T x, double e) {
                      if constexpr (std::is_floating_point_v<T>) {
                        if (e == 2.0) return static_cast<T>(x * x);
                        return static_cast<T>(std::pow(x, static_cast<T>(e)));
                      } else {
                        return static_cast<T>(
                            std::pow(static_cast<double>(x), e));
                      }
                    });
                return absl::OkStatus();
              });
        });
      });
  // BitShift: unsigned integers only; shifting by the bit width or more
  // gives 0 (C++ leaves it undefined).
  r.Register(
      "BitShift",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const std::string dir = info.node.GetString("direction", "");
        if (dir != "LEFT" && dir != "RIGHT") {
          return info.Error(
              absl::StrCat("direction must be LEFT or RIGHT, got '", dir, "'"));
        }
        const bool left = dir == "LEFT";
        return MakeKernel([left](KernelContext& ctx) -> absl::Status {
          return RunBinary<Accepts::kUnsigned>(
              ctx, {}, Out::kSame, [left]<typename T>(T x, T y) -> T {
                constexpr T kBits = sizeof(T) * 8;
                if (y >= kBits) return T(0);
                return static_cast<T>(left ? x << y : x >> y);
              });
        });
      });
}

}  // namespace

void RegisterBinary(KernelRegistry& r) {
  RegisterArithmetic(r);
  RegisterComparisonsAndLogic(r);
  RegisterPReluPowBitShift(r);
}

}  // namespace quantd::exec
