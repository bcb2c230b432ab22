// Training losses exported into inference graphs (and ONNX's node tests):
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// With input [N, C, d...] and target [N, d...]: per element
//   loss = -input[n, t, d] * w[t] (w = weight, or 1), and 0 with w = 0 when
//   t == ignore_index;
// reduction none keeps [N, d...], sum adds up, mean divides the sum by the
// sum of the w's taken (ONNX's reference). SoftmaxCrossEntropyLoss applies
// it to log_softmax(scores, axis 1) and can also return that log_prob.
#include "core/executor/kernels/losses.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class LossReduction { kNone, kSum, kMean };

struct LossAttrs {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<LossAttrs> ReadLossAttrs(const KernelInfo& info) {
  LossAttrs a;
  const std::string r = info.node.GetString("reduction", "mean");
  if (r == "none") {
    a.reduction = LossReduction::kNone;
  } else if (r == "sum") {
    a.reduction = LossReduction::kSum;
  } else if (r == "mean") {
    a.reduction = LossReduction::kMean;
  } else {
    return info.Error(absl::StrCat("unknown reduction '", r, "'"));
  }
  if (info.node.HasAttribute("ignore_index")) {
    a.ignore_index = info.node.GetInt("ignore_index", 0);
  }
  return a;
}

// Writes the loss of log-probabilities lp ([N, C, D] flattened, as double)
// for target/weight into output 0 with dtype `dtype`.
absl::Status NllLoss(KernelContext& ctx, const LossAttrs& a,
                     const std::vector<double>& lp, int64_t N, int64_t C,
                     int64_t D, const Tensor& target, const Tensor* weight,
                     DType dtype) {
  if (target.num_elements() != N * D) {
    return ctx.Error(absl::StrCat("target ", target.DebugString(),
                                  " does not match the input's [N, d...]"));
  }
  std::vector<int64_t> t(N * D);
  if (target.dtype() == DType::kInt64) {
    for (int64_t i = 0; i < N * D; ++i) t[i] = target.data<int64_t>()[i];
  } else if (target.dtype() == DType::kInt32) {
    for (int64_t i = 0; i < N * D; ++i) t[i] = target.data<int32_t>()[i];
  } else {
    return ctx.Error(absl::StrCat("target must be int32 or int64, got ",
                                  target.DebugString()));
  }
  std::vector<double> w(C, 1.0);
  if (weight != nullptr) {
    if (weight->num_elements() != C) {
      return ctx.Error(absl::StrCat("weight ", weight->DebugString(),
                                    " must hold C = ", C, " values"));
    }
    RETURN_IF_ERROR(DispatchFloat(weight->dtype(), [&]<typename T>(Tag<T>) {
      for (int64_t c = 0; c < C; ++c) w[c] = weight->data<T>()[c];
    }));
  }
  std::vector<double> loss(N * D, 0.0);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const int64_t cls = t[n * D + d];
      if (a.ignore_index && cls == *a.ignore_index) continue;
      if (cls < 0 || cls >= C) {
        return ctx.Error(
            absl::StrCat("target ", cls, " is out of range [0, ", C, ")"));
      }
      const double l = -lp[(n * C + cls) * D + d] * w[cls];
      loss[n * D + d] = l;
      loss_sum += l;
      weight_sum += w[cls];
    }
  }
  std::vector<int64_t> shape;
  std::vector<double> values;
  switch (a.reduction) {
    case LossReduction::kNone:
      shape = target.shape();
      values = std::move(loss);
      break;
    case LossReduction::kSum:
      values = {loss_sum};
      break;
    case LossReduction::kMean:
      values = {weight_sum == 0 ? std::numeric_limits<double>::quiet_NaN()
                                : loss_sum / weight_sum};
      break;
  }
  return DispatchFloat(dtype, [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(0, dtype, shape));
    T* out = y->mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      out[i] = static_cast<T>(values[i]);
    }
    return absl::OkStatus();
  });
}

// N, C, D of an input [N, C, d...].
absl::Status LossDims(const KernelContext& ctx, const Tensor& x, int64_t* N,
                      int64_t* C, int64_t* D) {
  if (x.rank() < 2) {
    return ctx.Error(
        absl::StrCat("input ", x.DebugString(), " must be [N, C, d...]"));
  }
  *N = x.dim(0);
  *C = x.dim(1);
  *D = 1;
  for (int64_t i = 2; i < x.rank(); ++i) *D *= x.dim(i);
  return absl::OkStatus();
}

absl::Status ComputeNll(KernelContext& ctx, const LossAttrs& a) {
  const Tensor& x = *ctx.input(0);
  int64_t N, C, D;
  RETURN_IF_ERROR(LossDims(ctx, x, &N, &C, &D));
  std::vector<double> lp(x.num_elements());
  RETURN_IF_ERROR(DispatchFloat(x.dtype(), [&]<typename T>(Tag<T>) {
    const T* p = x.data<T>();
    for (size_t i = 0; i < lp.size(); ++i) lp[i] = static_cast<double>(p[i]);
  }));
  return NllLoss(ctx, a, lp, N, C, D, *ctx.input(1), ctx.input(2), x.dtype());
}

absl::Status ComputeSce(KernelContext& ctx, const LossAttrs& a) {
  const Tensor& x = *ctx.input(0);
  int64_t N, C, D;
  RETURN_IF_ERROR(LossDims(ctx, x, &N, &C, &D));
  std::vector<double> lp(x.num_elements());
  RETURN_IF_ERROR(DispatchFloat(x.dtype(), [&]<typename T>(Tag<T>) {
    const T* p = x.data<T>();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t d = 0; d < D; ++d) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < C; ++c) {
          m = std::max(m, static_cast<double>(p[(n * C + c) * D + d]));
        }
        double s = 0;
        for (int64_t c = 0; c < C; ++c) {
          s += std::exp(static_cast<double>(p[(n * C + c) * D + d]) - m);
        }
        const double log_s = std::log(s);
        for (int64_t c = 0; c < C; ++c) {
          const int64_t i = (n * C + c) * D + d;
          lp[i] = static_cast<double>(p[i]) - m - log_s;
        }
      }
    }
  }));
  RETURN_IF_ERROR(
      NllLoss(ctx, a, lp, N, C, D, *ctx.input(1), ctx.input(2), x.dtype()));
  if (!ctx.OutputWanted(1)) return absl::OkStatus();
  return DispatchFloat(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(1, x.dtype(), x.shape()));
    T* out = y->mutable_data<T>();
    for (size_t i = 0; i < lp.size(); ++i) out[i] = static_cast<T>(lp[i]);
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterLosses(KernelRegistry& r) {
  r.Register(
      "NegativeLogLikelihoodLoss",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(LossAttrs a, ReadLossAttrs(info));
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputeNll(ctx, a); });
      });
  r.Register(
      "SoftmaxCrossEntropyLoss",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(LossAttrs a, ReadLossAttrs(info));
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputeSce(ctx, a); });
      });
}

}  // namespace quantd::exec
