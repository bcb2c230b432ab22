// MaxPool (optional Indices), AveragePool (count_include_pad), LpPool over
// 1-3 spatial dims, and the Global* variants over all spatial dims.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/window.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

struct PoolAttrs {
  WindowAttrs window;
  PoolKind kind = PoolKind::kMax;
  bool count_include_pad = false;
  int64_t storage_order = 0;
  float p = 2;
};

// Geometry padded to exactly 3 spatial dims (leading dims of size 1).
struct Geo3 {
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
};

Geo3 To3(const WindowGeometry& g) {
  Geo3 r;
  const int lead = 3 - g.rank();
  for (int i = 0; i < 3; ++i) {
    const int j = i - lead;
    const bool real = j >= 0;
    r.in[i] = real ? g.in[j] : 1;
    r.k[i] = real ? g.kernel[j] : 1;
    r.s[i] = real ? g.stride[j] : 1;
    r.d[i] = real ? g.dilation[j] : 1;
    r.pb[i] = real ? g.pad_begin[j] : 0;
    r.pe[i] = real ? g.pad_end[j] : 0;
    r.out[i] = real ? g.out[j] : 1;
  }
  return r;
}

template <typename T>
void PoolPlane(const PoolAttrs& a, const Geo3& g, const T* x, T* y,
               int64_t* indices, int64_t index_base) {
  const int64_t plane_in = g.in[0] * g.in[1] * g.in[2];
  int64_t o = 0;
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++o) {
        const int64_t st[3] = {o0 * g.s[0] - g.pb[0], o1 * g.s[1] - g.pb[1],
                               o2 * g.s[2] - g.pb[2]};
        double acc = 0;
        T best = std::numeric_limits<T>::lowest();
        int64_t best_idx = -1;
        int64_t valid = 0, padded = 0;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
          const int64_t i0 = st[0] + k0 * g.d[0];
          if (i0 < -g.pb[0] || i0 >= g.in[0] + g.pe[0]) continue;
          const bool v0 = i0 >= 0 && i0 < g.in[0];
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
            const int64_t i1 = st[1] + k1 * g.d[1];
            if (i1 < -g.pb[1] || i1 >= g.in[1] + g.pe[1]) continue;
            const bool v1 = v0 && i1 >= 0 && i1 < g.in[1];
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
              const int64_t i2 = st[2] + k2 * g.d[2];
              if (i2 < -g.pb[2] || i2 >= g.in[2] + g.pe[2]) continue;
              ++padded;
              if (!v1 || i2 < 0 || i2 >= g.in[2]) continue;
              ++valid;
              const int64_t off = (i0 * g.in[1] + i1) * g.in[2] + i2;
              const T v = x[off];
              switch (a.kind) {
                case PoolKind::kMax:
                  if (v > best || best_idx < 0) {
                    best = v;
                    best_idx = a.storage_order == 0
                                   ? off
                                   : (i2 * g.in[1] + i1) * g.in[0] + i0;
                  }
                  break;
                case PoolKind::kAverage:
                  acc += static_cast<double>(v);
                  break;
                case PoolKind::kLp:
                  acc += std::pow(std::abs(static_cast<double>(v)), a.p);
                  break;
              }
            }
          }
        }
        switch (a.kind) {
          case PoolKind::kMax:
            y[o] = best;
            if (indices != nullptr) indices[o] = index_base + best_idx;
            break;
          case PoolKind::kAverage: {
            const int64_t div = a.count_include_pad ? padded : valid;
            y[o] = static_cast<T>(div > 0 ? acc / div : 0.0);
            break;
          }
          case PoolKind::kLp:
            y[o] = static_cast<T>(std::pow(acc, 1.0 / a.p));
            break;
        }
      }
    }
  }
  (void)plane_in;
}

// Fast path for float max/average pooling over at most 2 spatial dims
// (g.in[0] == 1): whole output rows at a time, the kernel taps outermost, so
// the inner loops run over contiguous (stride 1) or evenly strided inputs and
// vectorise. Same window semantics as PoolPlane: padding never wins a max,
// average divisors count the taps inside the image (or inside image + pads
// with count_include_pad, windows clipped at the end padding by ceil_mode).
// Averages accumulate in float in tap order (ONNX Runtime does the same).
struct RowPlan {
  int64_t H, W, OH, OW, KH, KW, SH, SW, DH, DW, PH, PW;
  std::vector<float> inv_count;  // [OH * OW], average only
};

RowPlan MakeRowPlan(const PoolAttrs& a, const Geo3& g) {
  RowPlan p{g.in[1], g.in[2], g.out[1], g.out[2], g.k[1],  g.k[2], g.s[1],
            g.s[2],  g.d[1],  g.d[2],   g.pb[1],  g.pb[2], {}};
  if (a.kind != PoolKind::kAverage) return p;
  // Taps counted per output row/column; the window is their product.
  auto counts = [&](int64_t in, int64_t out, int64_t k, int64_t s, int64_t d,
                    int64_t pb, int64_t pe) {
    std::vector<int64_t> c(out, 0);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = o * s - pb + t * d;
        if (a.count_include_pad ? (i >= -pb && i < in + pe)
                                : (i >= 0 && i < in)) {
          ++c[o];
        }
      }
    }
    return c;
  };
  const std::vector<int64_t> ch =
      counts(p.H, p.OH, p.KH, p.SH, p.DH, p.PH, g.pe[1]);
  const std::vector<int64_t> cw =
      counts(p.W, p.OW, p.KW, p.SW, p.DW, p.PW, g.pe[2]);
  p.inv_count.resize(p.OH * p.OW);
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      const int64_t n = ch[oh] * cw[ow];
      p.inv_count[oh * p.OW + ow] = n > 0 ? 1.0f / static_cast<float>(n) : 0;
    }
  }
  return p;
}

template <bool kMax>
void PoolPlaneRows(const RowPlan& p, const float* x, float* y) {
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    float* __restrict yr = y + oh * p.OW;
    const float init = kMax ? std::numeric_limits<float>::lowest() : 0.0f;
    for (int64_t ow = 0; ow < p.OW; ++ow) yr[ow] = init;
    for (int64_t kh = 0; kh < p.KH; ++kh) {
      const int64_t ih = oh * p.SH - p.PH + kh * p.DH;
      if (ih < 0 || ih >= p.H) continue;
      const float* __restrict xr = x + ih * p.W;
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        const int64_t off = kw * p.DW - p.PW;
        // iw = ow * SW + off in [0, W) for ow in [lo, hi).
        const int64_t lo =
            std::min(off >= 0 ? 0 : (-off + p.SW - 1) / p.SW, p.OW);
        const int64_t hi =
            std::min(p.W - 1 - off < 0 ? 0 : (p.W - 1 - off) / p.SW + 1, p.OW);
        if (p.SW == 1) {
          const float* xs = xr + off;
          for (int64_t ow = lo; ow < hi; ++ow) {
            yr[ow] = kMax ? std::max(yr[ow], xs[ow]) : yr[ow] + xs[ow];
          }
        } else if (p.SW == 2) {
          const float* xs = xr + off;
          for (int64_t ow = lo; ow < hi; ++ow) {
            yr[ow] = kMax ? std::max(yr[ow], xs[2 * ow]) : yr[ow] + xs[2 * ow];
          }
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) {
            const float v = xr[ow * p.SW + off];
            yr[ow] = kMax ? std::max(yr[ow], v) : yr[ow] + v;
          }
        }
      }
    }
    if (!kMax) {
      const float* inv = p.inv_count.data() + oh * p.OW;
      for (int64_t ow = 0; ow < p.OW; ++ow) yr[ow] *= inv[ow];
    }
  }
}

absl::Status ComputePool(KernelContext& ctx, const PoolAttrs& a) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() < 3 || x.rank() > 5) {
    return ctx.Error(absl::StrCat("input ", x.DebugString(),
                                  " must have 1 to 3 spatial dims"));
  }
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  if (a.window.kernel_shape.size() != in.size()) {
    return ctx.Error(
        absl::StrCat("kernel_shape has ", a.window.kernel_shape.size(),
                     " dims, input has ", in.size(), " spatial dims"));
  }
  absl::StatusOr<WindowGeometry> geo =
      ComputeWindow(a.window, in, a.window.kernel_shape);
  if (!geo.ok()) return ctx.Error(geo.status().message());
  const Geo3 g = To3(*geo);
  std::vector<int64_t> shape = {x.dim(0), x.dim(1)};
  shape.insert(shape.end(), geo->out.begin(), geo->out.end());
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane_in = g.in[0] * g.in[1] * g.in[2];
  const int64_t plane_out = g.out[0] * g.out[1] * g.out[2];
  int64_t* indices = nullptr;
  if (a.kind == PoolKind::kMax && ctx.OutputWanted(1)) {
    ASSIGN_OR_RETURN(Tensor * t,
                     ctx.AllocateUninitialized(1, DType::kInt64, shape));
    indices = t->mutable_data<int64_t>();
  }
  if (x.dtype() == DType::kFloat && indices == nullptr && g.in[0] == 1 &&
      g.k[0] == 1 && g.out[0] == 1 && g.pb[0] == 0 &&
      (a.kind == PoolKind::kMax || a.kind == PoolKind::kAverage)) {
    const RowPlan plan = MakeRowPlan(a, g);
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(0, x.dtype(), shape));
    const float* in_p = x.data<float>();
    float* out_p = y->mutable_data<float>();
    const int64_t grain = std::max<int64_t>(
        1, (int64_t{1} << 14) / std::max<int64_t>(plane_out, 1));
    ParallelFor(ctx.pool(), planes, grain, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        if (a.kind == PoolKind::kMax) {
          PoolPlaneRows<true>(plan, in_p + p * plane_in, out_p + p * plane_out);
        } else {
          PoolPlaneRows<false>(plan, in_p + p * plane_in,
                               out_p + p * plane_out);
        }
      }
    });
    return absl::OkStatus();
  }
  auto run = [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(0, x.dtype(), shape));
    const T* in_p = x.data<T>();
    T* out_p = y->mutable_data<T>();
    ParallelFor(ctx.pool(), planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        PoolPlane<T>(a, g, in_p + p * plane_in, out_p + p * plane_out,
                     indices ? indices + p * plane_out : nullptr, p * plane_in);
      }
    });
    return absl::OkStatus();
  };
  if (a.kind == PoolKind::kMax) return DispatchNumeric(x.dtype(), run);
  return DispatchFloat(x.dtype(), run);
}

void RegisterPoolKind(KernelRegistry& r, const char* name, PoolKind kind) {
  r.Register(
      name,
      [kind](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        PoolAttrs a;
        ASSIGN_OR_RETURN(a.window, ReadWindowAttrs(info.node));
        a.kind = kind;
        a.count_include_pad = info.node.GetInt("count_include_pad", 0) != 0;
        a.storage_order = info.node.GetInt("storage_order", 0);
        a.p = static_cast<float>(info.node.GetInt("p", 2));
        if (info.node.HasAttribute("p") &&
            info.node.FindAttribute("p")->type == Attribute::Type::kFloat) {
          a.p = info.node.GetFloat("p", 2.0f);
        }
        if (a.window.kernel_shape.empty()) {
          return info.Error("missing required attribute 'kernel_shape'");
        }
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputePool(ctx, a); });
      });
}

// Sum of n values in 8 interleaved partial sums (vectorisable; a fixed
// order, so the result does not depend on threads).
template <typename T>
T SumLanes(const T* v, int64_t n) {
  T lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lane[j] += v[i + j];
  }
  T s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
        ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i) s += v[i];
  return s;
}

void RegisterGlobal(KernelRegistry& r, const char* name, PoolKind kind) {
  r.Register(
      name,
      [kind](
          const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const double p = info.node.GetInt("p", 2);
        return MakeKernel([kind, p](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          if (x.rank() < 2) return ctx.Error("input must have rank >= 2");
          std::vector<int64_t> shape = {x.dim(0), x.dim(1)};
          int64_t inner = 1;
          for (int64_t d = 2; d < x.rank(); ++d) {
            shape.push_back(1);
            inner *= x.dim(d);
          }
          auto run = [&]<typename T>(Tag<T>) -> absl::Status {
            ASSIGN_OR_RETURN(Tensor * y,
                             ctx.AllocateUninitialized(0, x.dtype(), shape));
            const T* in = x.data<T>();
            T* out = y->mutable_data<T>();
            // ~16 K elements a chunk: the late layers of small CNNs have
            // ~100 channels of a few hundred elements, too little to split.
            const int64_t grain = std::max<int64_t>(
                1, (int64_t{1} << 14) / std::max<int64_t>(inner, 1));
            ParallelFor(
                ctx.pool(), x.dim(0) * x.dim(1), grain,
                [&](int64_t b, int64_t e) {
                  for (int64_t c = b; c < e; ++c) {
                    const T* v = in + c * inner;
                    if (kind == PoolKind::kMax) {
                      T m = std::numeric_limits<T>::lowest();
                      for (int64_t i = 0; i < inner; ++i) m = std::max(m, v[i]);
                      out[c] = m;
                    } else if (kind == PoolKind::kAverage) {
                      out[c] = inner > 0
                                   ? SumLanes(v, inner) / static_cast<T>(inner)
                                   : T(0);
                    } else {
                      double s = 0;
                      for (int64_t i = 0; i < inner; ++i) {
                        s += std::pow(std::abs(static_cast<double>(v[i])), p);
                      }
                      out[c] = static_cast<T>(std::pow(s, 1.0 / p));
                    }
                  }
                });
            return absl::OkStatus();
          };
          return DispatchFloat(x.dtype(), run);
        });
      });
}

}  // namespace

void RegisterPool(KernelRegistry& r) {
  RegisterPoolKind(r, "MaxPool", PoolKind::kMax);
  RegisterPoolKind(r, "AveragePool", PoolKind::kAverage);
  RegisterPoolKind(r, "LpPool", PoolKind::kLp);
}

void RegisterGlobalPool(KernelRegistry& r) {
  RegisterGlobal(r, "GlobalMaxPool", PoolKind::kMax);
  RegisterGlobal(r, "GlobalAveragePool", PoolKind::kAverage);
  RegisterGlobal(r, "GlobalLpPool", PoolKind::kLp);
}

}  // namespace quantd::exec
