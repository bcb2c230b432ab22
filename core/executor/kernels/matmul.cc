// MatMul: numpy matmul (1-D operands promoted, batch dims broadcast), and
// MatMulInteger / QLinearMatMul.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/executor/gemm.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

// numpy matmul geometry: 1-D operands promoted, batch dims broadcast.
struct MatMulGeometry {
  int64_t M = 0, K = 0, N = 0;
  int64_t nb = 0;              // broadcast batch items
  std::vector<int64_t> shape;  // output shape
  std::vector<int64_t> a_batch, b_batch, batch;
};

absl::StatusOr<MatMulGeometry> PlanMatMul(const KernelContext& ctx,
                                          const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) return ctx.Error("scalar operand");
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulGeometry g;
  g.M = as[as.size() - 2];
  g.K = as.back();
  const int64_t KB = bs[bs.size() - 2];
  g.N = bs.back();
  if (g.K != KB) {
    return ctx.Error(absl::StrCat("inner dims differ: ", a.DebugString(), " x ",
                                  b.DebugString()));
  }
  g.a_batch.assign(as.begin(), as.end() - 2);
  g.b_batch.assign(bs.begin(), bs.end() - 2);
  absl::StatusOr<std::vector<int64_t>> batch =
      BroadcastShape(g.a_batch, g.b_batch);
  if (!batch.ok()) return ctx.Error(batch.status().message());
  g.batch = *batch;
  g.shape = *batch;
  if (!a_vec) g.shape.push_back(g.M);
  if (!b_vec) g.shape.push_back(g.N);
  g.nb = NumElements(*batch);
  return g;
}

absl::Status ComputeMatMul(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype() != b.dtype()) return ctx.Error("input types differ");
  ASSIGN_OR_RETURN(const MatMulGeometry geo, PlanMatMul(ctx, a, b));
  const int64_t M = geo.M, K = geo.K, N = geo.N, nb = geo.nb;
  const std::vector<int64_t>& shape = geo.shape;
  // Offsets of each batch item in A and B.
  const BroadcastPlan plan(geo.batch, {geo.a_batch, geo.b_batch});
  return DispatchNumeric(a.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, a.dtype(), shape));
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* out = y->mutable_data<T>();
    auto item_offsets = [&](int64_t i, int64_t* oa, int64_t* ob) {
      int64_t off[3];
      plan.RowOffsets(i / plan.inner(), off);
      const int64_t j = i % plan.inner();
      *oa = off[0] + j * plan.inner_step(0);
      *ob = off[1] + j * plan.inner_step(1);
    };
    if constexpr (std::is_floating_point_v<T>) {
      constexpr int64_t kRows = 64;
      const int64_t row_blocks = nb == 1 ? (M + kRows - 1) / kRows : 1;
      const int64_t rows = nb == 1 ? kRows : M;
      ParallelFor(ctx.pool(), nb * row_blocks, 1, [&](int64_t ib, int64_t ie) {
        for (int64_t it = ib; it < ie; ++it) {
          const int64_t i = it / row_blocks;
          const int64_t m0 = (it % row_blocks) * rows;
          const int64_t mb = std::min(rows, M - m0);
          int64_t oa, ob;
          item_offsets(i, &oa, &ob);
          GemmBlock<T>(false, false, mb, N, K, T(1), pa + oa * M * K + m0 * K,
                       K, pb + ob * K * N, N, out + i * M * N + m0 * N, N,
                       false);
        }
      });
    } else {
      for (int64_t i = 0; i < nb; ++i) {
        int64_t oa, ob;
        item_offsets(i, &oa, &ob);
        const T* ai = pa + oa * M * K;
        const T* bi = pb + ob * K * N;
        T* yi = out + i * M * N;
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t n = 0; n < N; ++n) {
            T acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc += ai[m * K + k] * bi[k * N + n];
            yi[m * N + n] = acc;
          }
        }
      }
    }
    return absl::OkStatus();
  });
}

// int32 (A - a_zero_point) x (B - b_zero_point) of inputs ia, ib with zero
// points at inputs iza, izb (absent: 0); A and B are uint8 or int8,
// a_zero_point is a scalar or per row of A ([M]), b_zero_point a scalar or
// per column of B ([N]). Exact integer sums (wrapping past int32).
absl::StatusOr<Tensor> IntegerMatMul(const KernelContext& ctx, int ia, int iza,
                                     int ib, int izb) {
  const Tensor& a = *ctx.input(ia);
  const Tensor& b = *ctx.input(ib);
  auto is_8bit = [](const Tensor& t) {
    return t.dtype() == DType::kUint8 || t.dtype() == DType::kInt8;
  };
  if (!is_8bit(a) || !is_8bit(b)) {
    return ctx.Error(absl::StrCat("A and B must be uint8 or int8, got ",
                                  a.DebugString(), " and ", b.DebugString()));
  }
  ASSIGN_OR_RETURN(const MatMulGeometry geo, PlanMatMul(ctx, a, b));
  const int64_t M = geo.M, K = geo.K, N = geo.N;
  // Zero points widened to int32, one per row (A) or column (B).
  auto zero_points =
      [&](int k, const Tensor& x,
          int64_t count) -> absl::StatusOr<std::vector<int32_t>> {
    std::vector<int32_t> z(count, 0);
    const Tensor* t = ctx.input(k);
    if (t == nullptr) return z;
    if (t->dtype() != x.dtype() ||
        (t->num_elements() != 1 && t->num_elements() != count)) {
      return ctx.Error(absl::StrCat(
          "zero point (input ", k, ") ", t->DebugString(),
          " must be a scalar or hold ", count, " values of the input's type"));
    }
    RETURN_IF_ERROR(DispatchNumeric(t->dtype(), [&]<typename Z>(Tag<Z>) {
      const Z* p = t->data<Z>();
      for (int64_t i = 0; i < count; ++i) {
        z[i] = static_cast<int32_t>(p[t->num_elements() == 1 ? 0 : i]);
      }
    }));
    return z;
  };
  ASSIGN_OR_RETURN(const std::vector<int32_t> za, zero_points(iza, a, M));
  ASSIGN_OR_RETURN(const std::vector<int32_t> zb, zero_points(izb, b, N));
  auto widen = [](const Tensor& t) {
    std::vector<int32_t> v(t.num_elements());
    if (t.dtype() == DType::kUint8) {
      const uint8_t* p = t.data<uint8_t>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
    } else {
      const int8_t* p = t.data<int8_t>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
    }
    return v;
  };
  const std::vector<int32_t> av = widen(a), bv = widen(b);
  ASSIGN_OR_RETURN(Tensor y, Tensor::Create(DType::kInt32, geo.shape,
                                            ctx.max_tensor_bytes()));
  int32_t* out = y.mutable_data<int32_t>();
  const BroadcastPlan plan(geo.batch, {geo.a_batch, geo.b_batch});
  std::vector<int64_t> row(N);  // wide: huge K must wrap, not overflow (UB)
  for (int64_t i = 0; i < geo.nb; ++i) {
    int64_t off[3];
    plan.RowOffsets(i / plan.inner(), off);
    const int64_t j = i % plan.inner();
    const int32_t* ai = av.data() + (off[0] + j * plan.inner_step(0)) * M * K;
    const int32_t* bi = bv.data() + (off[1] + j * plan.inner_step(1)) * K * N;
    int32_t* yi = out + i * M * N;
    for (int64_t m = 0; m < M; ++m) {
      std::fill(row.begin(), row.end(), 0);
      for (int64_t k = 0; k < K; ++k) {
        const int32_t x = ai[m * K + k] - za[m];
        const int32_t* br = bi + k * N;
        for (int64_t n = 0; n < N; ++n) row[n] += int64_t{x} * (br[n] - zb[n]);
      }
      for (int64_t n = 0; n < N; ++n) {
        yi[m * N + n] = static_cast<int32_t>(row[n]);
      }
    }
  }
  return y;
}

absl::Status ComputeMatMulInteger(KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor y, IntegerMatMul(ctx, 0, 2, 1, 3));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

// QLinearMatMul: y = saturate(round_half_even(C * (a_scale * b_scale /
// y_scale)) + y_zero_point) with C the integer product above; per-tensor
// scales. As ONNX's reference: the multiplier in float, the product in
// double.
absl::Status ComputeQLinearMatMul(KernelContext& ctx) {
  for (int k : {1, 4, 6}) {
    const Tensor& t = *ctx.input(k);
    if (t.dtype() != DType::kFloat || t.num_elements() != 1) {
      return absl::UnimplementedError(
          absl::StrCat("QLinearMatMul supports one float scale per tensor; "
                       "input ",
                       k, " is ", t.DebugString()));
    }
  }
  const Tensor* zy = ctx.input(7);
  if (zy == nullptr || zy->num_elements() != 1 ||
      (zy->dtype() != DType::kUint8 && zy->dtype() != DType::kInt8)) {
    return ctx.Error("y_zero_point must be one uint8 or int8 value");
  }
  ASSIGN_OR_RETURN(Tensor c, IntegerMatMul(ctx, 0, 2, 3, 5));
  const float multiplier = ctx.input(1)->data<float>()[0] *
                           ctx.input(4)->data<float>()[0] /
                           ctx.input(6)->data<float>()[0];
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, zy->dtype(), c.shape()));
  const int32_t* in = c.data<int32_t>();
  auto requantize = [&]<typename Q>(Q* out, Q zero) {
    for (int64_t i = 0; i < c.num_elements(); ++i) {
      const double v = std::nearbyint(static_cast<double>(in[i]) *
                                      static_cast<double>(multiplier)) +
                       zero;
      out[i] = static_cast<Q>(std::clamp<double>(
          v, std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max()));
    }
  };
  if (zy->dtype() == DType::kUint8) {
    requantize(y->mutable_data<uint8_t>(), zy->data<uint8_t>()[0]);
  } else {
    requantize(y->mutable_data<int8_t>(), zy->data<int8_t>()[0]);
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMatMul(KernelRegistry& r) {
  r.Register("MatMulInteger",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel(ComputeMatMulInteger);
             });
  r.Register("QLinearMatMul",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel(ComputeQLinearMatMul);
             });
  r.Register("MatMul",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel(ComputeMatMul);
             });
}

}  // namespace quantd::exec
