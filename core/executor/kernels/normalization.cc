// LayerNormalization: y = (x - mean) / sqrt(var + eps) * scale + B over
// dims [axis, rank); InstanceNormalization: the same per (n, c) over spatial
// dims with per-channel scale/B; LRN: y = x / (bias + alpha / size *
// sum of x^2 over the `size` channels around c)^beta;
// MeanVarianceNormalization: y = (x - mean) / (sqrt(mean(x^2) - mean^2) +
// 1e-9) over `axes` (ONNX's reference formula); Det.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

void RegisterLayerNormalization(KernelRegistry& r) {
  r.Register(
      "LayerNormalization",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr = info.node.GetInt("axis", -1);
        const double eps = info.node.GetFloat("epsilon", 1e-5f);
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const Tensor& scale = *ctx.input(1);
          const Tensor* bias = ctx.input(2);
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
          int64_t outer = 1, n = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
          for (int64_t d = axis; d < x.rank(); ++d) n *= x.dim(d);
          const std::vector<int64_t> norm_shape(x.shape().begin() + axis,
                                                x.shape().end());
          for (const Tensor* t : {&scale, bias}) {
            if (t == nullptr) continue;
            absl::StatusOr<std::vector<int64_t>> b =
                BroadcastShape(norm_shape, t->shape());
            if (!b.ok() || *b != norm_shape || t->dtype() != x.dtype()) {
              return ctx.Error(absl::StrCat("scale/bias ", t->DebugString(),
                                            " does not broadcast to ",
                                            ShapeString(norm_shape)));
            }
          }
          std::vector<int64_t> stat_shape = x.shape();
          for (int64_t d = axis; d < x.rank(); ++d) stat_shape[d] = 1;
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, x.dtype(), x.shape()));
                T* mean_out = nullptr;
                T* inv_out = nullptr;
                if (ctx.OutputWanted(1)) {
                  ASSIGN_OR_RETURN(Tensor * t,
                                   ctx.Allocate(1, x.dtype(), stat_shape));
                  mean_out = t->template mutable_data<T>();
                }
                if (ctx.OutputWanted(2)) {
                  ASSIGN_OR_RETURN(Tensor * t,
                                   ctx.Allocate(2, x.dtype(), stat_shape));
                  inv_out = t->template mutable_data<T>();
                }
                // Scale/bias expanded to n values (they broadcast over the
                // tail).
                std::vector<T> s(n), b(n, T(0));
                auto expand = [&](const Tensor& t, std::vector<T>* v) {
                  const int64_t m = t.num_elements();
                  for (int64_t i = 0; i < n; ++i) {
                    (*v)[i] = t.data<T>()[m == n ? i : (m == 1 ? 0 : i % m)];
                  }
                };
                expand(scale, &s);
                if (bias) expand(*bias, &b);
                const T* in = x.data<T>();
                T* out = y->mutable_data<T>();
                ParallelFor(
                    ctx.pool(), outer,
                    std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)),
                    [&](int64_t ob, int64_t oe) {
                      for (int64_t o = ob; o < oe; ++o) {
                        const T* p = in + o * n;
                        double sum = 0;
                        for (int64_t i = 0; i < n; ++i) sum += p[i];
                        const double mean = sum / n;
                        double sq = 0;
                        for (int64_t i = 0; i < n; ++i)
                          sq += (p[i] - mean) * (p[i] - mean);
                        const double inv = 1.0 / std::sqrt(sq / n + eps);
                        T* q = out + o * n;
                        for (int64_t i = 0; i < n; ++i) {
                          q[i] =
                              static_cast<T>((p[i] - mean) * inv) * s[i] + b[i];
                        }
                        if (mean_out) mean_out[o] = static_cast<T>(mean);
                        if (inv_out) inv_out[o] = static_cast<T>(inv);
                      }
                    });
                return absl::OkStatus();
              });
        });
      });
}

void RegisterInstanceNormalization(KernelRegistry& r) {
  r.Register(
      "InstanceNormalization",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const double eps = info.node.GetFloat("epsilon", 1e-5f);
        return MakeKernel([eps](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const Tensor& scale = *ctx.input(1);
          const Tensor& bias = *ctx.input(2);
          if (x.rank() < 3) return ctx.Error("input must have rank >= 3");
          const int64_t C = x.dim(1);
          if (scale.num_elements() != C || bias.num_elements() != C ||
              scale.dtype() != x.dtype() || bias.dtype() != x.dtype()) {
            return ctx.Error(
                absl::StrCat("scale and B must have ", C, " elements"));
          }
          int64_t n = 1;
          for (int64_t d = 2; d < x.rank(); ++d) n *= x.dim(d);
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, x.dtype(), x.shape()));
                const T* in = x.data<T>();
                T* out = y->mutable_data<T>();
                ParallelFor(
                    ctx.pool(), x.dim(0) * C, 1, [&](int64_t pb, int64_t pe) {
                      for (int64_t p = pb; p < pe; ++p) {
                        const int64_t c = p % C;
                        const T* v = in + p * n;
                        double sum = 0;
                        for (int64_t i = 0; i < n; ++i) sum += v[i];
                        const double mean = n ? sum / n : 0;
                        double sq = 0;
                        for (int64_t i = 0; i < n; ++i)
                          sq += (v[i] - mean) * (v[i] - mean);
                        const double k = scale.data<T>()[c] /
                                         std::sqrt((n ? sq / n : 0) + eps);
                        const double b = bias.data<T>()[c];
                        T* q = out + p * n;
                        for (int64_t i = 0; i < n; ++i)
                          q[i] = static_cast<T>((v[i] - mean) * k + b);
                      }
                    });
                return absl::OkStatus();
              });
        });
      });
}

void RegisterLrn(KernelRegistry& r) {
  r.Register(
      "LRN",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t size = info.node.GetInt("size", 0);
        if (size < 1) return info.Error("attribute 'size' must be >= 1");
        const double alpha = info.node.GetFloat("alpha", 1e-4f);
        const double beta = info.node.GetFloat("beta", 0.75f);
        const double bias = info.node.GetFloat("bias", 1.0f);
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.rank() < 2) return ctx.Error("input must be [N, C, ...]");
          const int64_t N = x.dim(0), C = x.dim(1);
          const int64_t inner =
              C == 0 || N == 0 ? 0 : x.num_elements() / (N * C);
          // Window [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped.
          const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, x.dtype(), x.shape()));
                const T* in = x.data<T>();
                T* out = y->mutable_data<T>();
                for (int64_t n = 0; n < N; ++n) {
                  for (int64_t c = 0; c < C; ++c) {
                    const int64_t c0 = std::max<int64_t>(0, c - lo);
                    const int64_t c1 = std::min<int64_t>(C - 1, c + hi);
                    for (int64_t j = 0; j < inner; ++j) {
                      double sq = 0;
                      for (int64_t k = c0; k <= c1; ++k) {
                        const double v = in[(n * C + k) * inner + j];
                        sq += v * v;
                      }
                      const int64_t o = (n * C + c) * inner + j;
                      out[o] = static_cast<T>(
                          in[o] / std::pow(bias + alpha / size * sq, beta));
                    }
                  }
                }
                return absl::OkStatus();
              });
        });
      });
}

void RegisterMeanVarianceNormalization(KernelRegistry& r) {
  r.Register(
      "MeanVarianceNormalization",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        std::vector<int64_t> axes = {0, 2, 3};
        if (const Attribute* a = info.node.FindAttribute("axes")) {
          axes = a->ints;
        }
        return MakeKernel([axes](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          std::vector<char> reduced(x.rank(), 0);
          for (int64_t a : axes) {
            ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(a, x.rank(), "axes"));
            reduced[ax] = 1;
          }
          // Group of each element: its index with the reduced dims dropped.
          const std::vector<int64_t> strides = StridesOf(x.shape());
          std::vector<int64_t> group_strides(x.rank(), 0);
          int64_t groups = 1;
          for (int64_t d = x.rank() - 1; d >= 0; --d) {
            if (reduced[d]) continue;
            group_strides[d] = groups;
            groups *= x.dim(d);
          }
          const int64_t n = x.num_elements();
          std::vector<int64_t> group(n);
          for (int64_t i = 0; i < n; ++i) {
            int64_t rem = i, g = 0;
            for (int64_t d = 0; d < x.rank(); ++d) {
              g += (rem / strides[d]) * group_strides[d];
              rem %= strides[d];
            }
            group[i] = g;
          }
          const double count =
              groups == 0 ? 0 : static_cast<double>(n) / groups;
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                const T* in = x.data<T>();
                std::vector<double> sum(groups, 0), sum_sq(groups, 0);
                for (int64_t i = 0; i < n; ++i) {
                  sum[group[i]] += in[i];
                  sum_sq[group[i]] += static_cast<double>(in[i]) * in[i];
                }
                ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(
                                                 0, x.dtype(), x.shape()));
                T* out = y->mutable_data<T>();
                for (int64_t i = 0; i < n; ++i) {
                  const double mean = sum[group[i]] / count;
                  const double var = sum_sq[group[i]] / count - mean * mean;
                  out[i] = static_cast<T>(
                      (in[i] - mean) / (std::sqrt(std::max(var, 0.0)) + 1e-9));
                }
                return absl::OkStatus();
              });
        });
      });
}

// Det: determinant of each trailing M x M matrix, by LU decomposition with
// partial pivoting in double.
void RegisterDet(KernelRegistry& r) {
  r.Register(
      "Det", [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) {
            return ctx.Error(absl::StrCat("input ", x.DebugString(),
                                          " must be [..., M, M]"));
          }
          const int64_t M = x.dim(x.rank() - 1);
          const std::vector<int64_t> shape(x.shape().begin(),
                                           x.shape().end() - 2);
          const int64_t mats = NumElements(shape);
          return DispatchFloat(
              x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(
                    Tensor * y, ctx.AllocateUninitialized(0, x.dtype(), shape));
                std::vector<double> a(M * M);
                for (int64_t m = 0; m < mats; ++m) {
                  const T* in = x.data<T>() + m * M * M;
                  for (int64_t i = 0; i < M * M; ++i) a[i] = in[i];
                  double det = 1;
                  for (int64_t k = 0; k < M && det != 0; ++k) {
                    int64_t p = k;
                    for (int64_t i = k + 1; i < M; ++i) {
                      if (std::abs(a[i * M + k]) > std::abs(a[p * M + k]))
                        p = i;
                    }
                    if (a[p * M + k] == 0) {
                      det = 0;
                      break;
                    }
                    if (p != k) {
                      for (int64_t j = 0; j < M; ++j) {
                        std::swap(a[k * M + j], a[p * M + j]);
                      }
                      det = -det;
                    }
                    det *= a[k * M + k];
                    for (int64_t i = k + 1; i < M; ++i) {
                      const double f = a[i * M + k] / a[k * M + k];
                      for (int64_t j = k; j < M; ++j)
                        a[i * M + j] -= f * a[k * M + j];
                    }
                  }
                  y->mutable_data<T>()[m] = static_cast<T>(det);
                }
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace

void RegisterNormalization(KernelRegistry& r) {
  RegisterLayerNormalization(r);
  RegisterInstanceNormalization(r);
  RegisterLrn(r);
  RegisterMeanVarianceNormalization(r);
  RegisterDet(r);
}

}  // namespace quantd::exec
