// Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare} over axes
// (attribute, or input since opset 13 for ReduceSum and 18 for the others);
// keepdims, noop_with_empty_axes. ArgMax/ArgMin along one axis.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Red {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare
};

struct ReduceAttrs {
  Red kind;
  bool axes_from_input;
  std::vector<int64_t> axes;
  bool keepdims;
  bool noop_with_empty_axes;
};

// Splits the input into kept and reduced index spaces: out[i] = reduce over
// reduced offsets r of in[kept_offset(i) + r].
absl::Status ComputeReduce(KernelContext& ctx, const ReduceAttrs& a) {
  const Tensor& x = *ctx.input(0);
  std::vector<int64_t> axes = a.axes;
  if (a.axes_from_input && ctx.input(1) != nullptr) {
    ASSIGN_OR_RETURN(axes, ReadInts(*ctx.input(1), "axes"));
  }
  const int64_t r = x.rank();
  std::vector<char> reduced(r, 0);
  if (axes.empty()) {
    if (a.noop_with_empty_axes) {
      ctx.SetOutput(0, x);
      return absl::OkStatus();
    }
    std::fill(reduced.begin(), reduced.end(), 1);
  }
  for (int64_t ax : axes) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(ax, r, "axes"));
    reduced[n] = 1;
  }
  std::vector<int64_t> shape, kept_dims, kept_strides, red_dims, red_strides;
  const std::vector<int64_t> strides = StridesOf(x.shape());
  for (int64_t d = 0; d < r; ++d) {
    if (reduced[d]) {
      if (a.keepdims) shape.push_back(1);
      red_dims.push_back(x.dim(d));
      red_strides.push_back(strides[d]);
    } else {
      shape.push_back(x.dim(d));
      kept_dims.push_back(x.dim(d));
      kept_strides.push_back(strides[d]);
    }
  }
  int64_t nred = 1;
  for (int64_t d : red_dims) nred *= d;
  std::vector<int64_t> red_off(nred);
  for (int64_t i = 0; i < nred; ++i) {
    int64_t rem = i, off = 0;
    for (int d = static_cast<int>(red_dims.size()) - 1; d >= 0; --d) {
      off += (rem % red_dims[d]) * red_strides[d];
      rem /= red_dims[d];
    }
    red_off[i] = off;
  }
  return DispatchNumeric(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, x.dtype(), shape));
    const T* in = x.data<T>();
    T* out = y->mutable_data<T>();
    const int64_t nout = y->num_elements();
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    ParallelFor(
        ctx.pool(), nout,
        std::max<int64_t>(1, 8192 / std::max<int64_t>(nred, 1)),
        [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) {
            int64_t rem = o, base = 0;
            for (int d = static_cast<int>(kept_dims.size()) - 1; d >= 0; --d) {
              base += (rem % kept_dims[d]) * kept_strides[d];
              rem /= kept_dims[d];
            }
            const T* p = in + base;
            Acc acc;
            switch (a.kind) {
              case Red::kMax:
                acc = nred ? static_cast<Acc>(p[red_off[0]])
                           : static_cast<Acc>(std::numeric_limits<T>::lowest());
                for (int64_t i = 1; i < nred; ++i)
                  acc = std::max<Acc>(acc, p[red_off[i]]);
                break;
              case Red::kMin:
                acc = nred ? static_cast<Acc>(p[red_off[0]])
                           : static_cast<Acc>(std::numeric_limits<T>::max());
                for (int64_t i = 1; i < nred; ++i)
                  acc = std::min<Acc>(acc, p[red_off[i]]);
                break;
              case Red::kProd:
                acc = 1;
                for (int64_t i = 0; i < nred; ++i) acc *= p[red_off[i]];
                break;
              case Red::kL1:
                acc = 0;
                for (int64_t i = 0; i < nred; ++i) {
                  const Acc v = p[red_off[i]];
                  acc += v < 0 ? -v : v;
                }
                break;
              case Red::kL2:
              case Red::kSumSquare:
                acc = 0;
                for (int64_t i = 0; i < nred; ++i) {
                  const Acc v = p[red_off[i]];
                  acc += v * v;
                }
                if (a.kind == Red::kL2)
                  acc = static_cast<Acc>(std::sqrt(static_cast<double>(acc)));
                break;
              case Red::kLogSumExp: {
                double mx = -std::numeric_limits<double>::infinity();
                for (int64_t i = 0; i < nred; ++i)
                  mx = std::max<double>(mx, p[red_off[i]]);
                double s = 0;
                for (int64_t i = 0; i < nred; ++i)
                  s += std::exp(p[red_off[i]] - mx);
                acc = static_cast<Acc>(
                    nred ? mx + std::log(s)
                         : -std::numeric_limits<double>::infinity());
                break;
              }
              default:
                acc = 0;
                for (int64_t i = 0; i < nred; ++i) acc += p[red_off[i]];
                if (a.kind == Red::kMean && nred > 0)
                  acc = acc / static_cast<Acc>(nred);
                if (a.kind == Red::kLogSum)
                  acc = static_cast<Acc>(std::log(static_cast<double>(acc)));
                break;
            }
            out[o] = static_cast<T>(acc);
          }
        });
    return absl::OkStatus();
  });
}

void RegisterReduceOp(KernelRegistry& r, const char* name, Red kind,
                      int64_t input_since) {
  r.Register(
      name,
      [=](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ReduceAttrs a;
        a.kind = kind;
        a.axes_from_input = info.opset >= input_since;
        a.axes = info.node.GetInts("axes");
        a.keepdims = info.node.GetInt("keepdims", 1) != 0;
        a.noop_with_empty_axes =
            info.node.GetInt("noop_with_empty_axes", 0) != 0;
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputeReduce(ctx, a); });
      });
}

void RegisterArg(KernelRegistry& r, const char* name, bool is_max) {
  r.Register(
      name,
      [is_max](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr = info.node.GetInt("axis", 0);
        const bool keepdims = info.node.GetInt("keepdims", 1) != 0;
        const bool last = info.node.GetInt("select_last_index", 0) != 0;
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
          const int64_t n = x.dim(axis);
          if (n == 0) return ctx.Error("cannot take arg of an empty axis");
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
          for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
          std::vector<int64_t> shape = x.shape();
          if (keepdims) {
            shape[axis] = 1;
          } else {
            shape.erase(shape.begin() + axis);
          }
          return DispatchNumeric(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, DType::kInt64, shape));
                const T* in = x.data<T>();
                int64_t* out = y->mutable_data<int64_t>();
                for (int64_t o = 0; o < outer; ++o) {
                  for (int64_t i = 0; i < inner; ++i) {
                    const T* p = in + o * n * inner + i;
                    int64_t best = 0;
                    for (int64_t k = 1; k < n; ++k) {
                      const T v = p[k * inner], b = p[best * inner];
                      const bool better = is_max ? (last ? v >= b : v > b)
                                                 : (last ? v <= b : v < b);
                      if (better) best = k;
                    }
                    out[o * inner + i] = best;
                  }
                }
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace

void RegisterReduce(KernelRegistry& r) {
  RegisterReduceOp(r, "ReduceSum", Red::kSum, 13);
  RegisterReduceOp(r, "ReduceMean", Red::kMean, 18);
  RegisterReduceOp(r, "ReduceMax", Red::kMax, 18);
  RegisterReduceOp(r, "ReduceMin", Red::kMin, 18);
  RegisterReduceOp(r, "ReduceProd", Red::kProd, 18);
  RegisterReduceOp(r, "ReduceL1", Red::kL1, 18);
  RegisterReduceOp(r, "ReduceL2", Red::kL2, 18);
  RegisterReduceOp(r, "ReduceLogSum", Red::kLogSum, 18);
  RegisterReduceOp(r, "ReduceLogSumExp", Red::kLogSumExp, 18);
  RegisterReduceOp(r, "ReduceSumSquare", Red::kSumSquare, 18);
}

void RegisterArgMinMax(KernelRegistry& r) {
  RegisterArg(r, "ArgMax", true);
  RegisterArg(r, "ArgMin", false);
  // CumSum: y[i] = sum of x[j] for j <= i along axis (j < i when exclusive;
  // from the end when reverse).
  r.Register(
      "CumSum",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool exclusive = info.node.GetInt("exclusive", 0) != 0;
        const bool reverse = info.node.GetInt("reverse", 0) != 0;
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (ctx.input(1) == nullptr)
            return ctx.Error("axis input is required");
          ASSIGN_OR_RETURN(double axis_v, ReadScalar(*ctx.input(1), "axis"));
          ASSIGN_OR_RETURN(
              int64_t axis,
              NormalizeAxis(static_cast<int64_t>(axis_v), x.rank()));
          int64_t outer = 1, inner = 1;
          const int64_t n = x.dim(axis);
          for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
          for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
          return DispatchNumeric(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, x.dtype(), x.shape()));
                const T* in = x.data<T>();
                T* out = y->mutable_data<T>();
                for (int64_t o = 0; o < outer; ++o) {
                  for (int64_t i = 0; i < inner; ++i) {
                    T acc = 0;
                    for (int64_t s = 0; s < n; ++s) {
                      const int64_t k = reverse ? n - 1 - s : s;
                      const int64_t off = (o * n + k) * inner + i;
                      if (exclusive) {
                        out[off] = acc;
                        acc += in[off];
                      } else {
                        acc += in[off];
                        out[off] = acc;
                      }
                    }
                  }
                }
                return absl::OkStatus();
              });
        });
      });
  // TopK: the k largest (or smallest) values along axis and their indices;
  // ties keep the lower index first.
  r.Register(
      "TopK",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr = info.node.GetInt("axis", -1);
        const bool largest = info.node.GetInt("largest", 1) != 0;
        const bool k_attr = info.opset < 10;
        const int64_t k_value = info.node.GetInt("k", 0);
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
          int64_t k = k_value;
          if (!k_attr) {
            if (ctx.input(1) == nullptr)
              return ctx.Error("K input is required");
            ASSIGN_OR_RETURN(auto kv, ReadInts(*ctx.input(1), "K"));
            if (kv.size() != 1) return ctx.Error("K must have one value");
            k = kv[0];
          }
          const int64_t n = x.dim(axis);
          if (k < 0 || k > n)
            return ctx.Error(absl::StrCat("K ", k, " out of range"));
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
          for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
          std::vector<int64_t> shape = x.shape();
          shape[axis] = k;
          return DispatchNumeric(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * v, ctx.Allocate(0, x.dtype(), shape));
                ASSIGN_OR_RETURN(Tensor * ix,
                                 ctx.Allocate(1, DType::kInt64, shape));
                const T* in = x.data<T>();
                std::vector<int64_t> order(n);
                for (int64_t o = 0; o < outer; ++o) {
                  for (int64_t i = 0; i < inner; ++i) {
                    const T* p = in + o * n * inner + i;
                    for (int64_t j = 0; j < n; ++j) order[j] = j;
                    // NaN ranks above every number, so the order stays
                    // strict-weak.
                    auto key = [](T v) -> double {
                      const double d = static_cast<double>(v);
                      return d != d ? std::numeric_limits<double>::infinity()
                                    : d;
                    };
                    std::stable_sort(order.begin(), order.end(),
                                     [&](int64_t a, int64_t b) {
                                       const double ka = key(p[a * inner]),
                                                    kb = key(p[b * inner]);
                                       return largest ? ka > kb : ka < kb;
                                     });
                    for (int64_t j = 0; j < k; ++j) {
                      const int64_t off = (o * k + j) * inner + i;
                      v->mutable_data<T>()[off] = p[order[j] * inner];
                      ix->mutable_data<int64_t>()[off] = order[j];
                    }
                  }
                }
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
