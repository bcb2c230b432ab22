// The fake quantizers of mct_quantizers 1.5.2 (domain "mct_quantizers"), as
// MCT's MCTQ ONNX export writes them. Each computes in float32 exactly what
// the op's torch forward computes (the function its symbolic() stands for),
// with round half to even (std::nearbyint, torch.round):
//   Activation{POT,Symmetric}: s = T/2^(n-1) (signed) or T/2^n, lo = -T or 0,
//     hi = T - s:  y = round(clip(x, lo, hi) / s) * s
//   ActivationUniform: [a, b] = range adjusted to hold 0 (numpy, float64),
//     d = (b-a)/(2^n-1):  y = d * round((clip(x, a, b) - a) / d) + a
//   Weights{POT,Symmetric}(W, T[c]): s = T/2^(n-1), lo = -T, hi = T - s:
//     y = round(where(W > hi, hi, where(W < lo, lo, W)) / s) * s
//   WeightsUniform(W, min[c], max[c]): range adjusted to hold 0 (float32),
//     d = (b-a)/(2^n-1):  y = round(where(W > b, b, where(W < a, a, W)) / d) *
//     d
//   WeightsLUT{POT,Symmetric}(W, lut, T[c]): v = clip(W / (T+eps) * 2^(k-1),
//     -2^(k-1), 2^(k-1)-1), y = lut[argmin |v - lut|] / 2^(k-1) * T  (k =
//     lut_values_bitwidth, first index on ties)
// Per-channel parameters run along `channel_axis`; per-tensor ones have one
// element. Attributes and constant parameters are checked at Prepare.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/executor/elementwise.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/graph/mctq_ops.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

constexpr int64_t kMaxBits = 30;

absl::StatusOr<int64_t> RequiredInt(const KernelInfo& info,
                                    absl::string_view key, int64_t lo,
                                    int64_t hi) {
  const Attribute* a = info.node.FindAttribute(key);
  if (a == nullptr || a->type != Attribute::Type::kInt) {
    return info.Error(absl::StrCat("needs the int attribute '", key, "'"));
  }
  if (a->i < lo || a->i > hi) {
    return info.Error(absl::StrCat("attribute '", key, "' = ", a->i,
                                   ", expected ", lo, "..", hi));
  }
  return a->i;
}

absl::StatusOr<float> RequiredFloat(const KernelInfo& info,
                                    absl::string_view key) {
  const Attribute* a = info.node.FindAttribute(key);
  if (a == nullptr || a->type != Attribute::Type::kFloat ||
      !std::isfinite(a->f)) {
    return info.Error(
        absl::StrCat("needs the finite float attribute '", key, "'"));
  }
  return a->f;
}

// A constant float parameter input (threshold, ranges, LUT values).
absl::StatusOr<std::vector<float>> ConstantFloats(const KernelInfo& info,
                                                  size_t k,
                                                  absl::string_view what) {
  const Tensor* t = info.ConstantInput(k);
  if (t == nullptr || t->dtype() != DType::kFloat || t->num_elements() < 1) {
    return info.Error(absl::StrCat("input ", k, " (", what,
                                   ") must be a constant float tensor"));
  }
  auto s = t->span<float>();
  for (float v : s) {
    if (!std::isfinite(v)) {
      return info.Error(absl::StrCat("input ", k, " (", what,
                                     ") holds a value that is not finite"));
    }
  }
  return std::vector<float>(s.begin(), s.end());
}

absl::Status RequireFloatInput(const KernelContext& ctx, const Tensor& x) {
  if (x.dtype() != DType::kFloat) {
    return ctx.Error(
        absl::StrCat("input 0 must be float32, got ", x.DebugString()));
  }
  return absl::OkStatus();
}

// ---- Activations ----------------------------------------------------------

// An activation quantizer: `op` on every element of the float input 0
// (elementwise.h's UnaryLoop, chunked on the pool).
template <typename Op>
std::unique_ptr<Kernel> MakeActivationKernel(Op op) {
  return MakeKernel([op](KernelContext& ctx) -> absl::Status {
    const Tensor& x = *ctx.input(0);
    RETURN_IF_ERROR(RequireFloatInput(ctx, x));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(0, DType::kFloat, x.shape()));
    UnaryLoop(ctx.pool(), x.data<float>(), y->mutable_data<float>(),
              x.num_elements(), op);
    return absl::OkStatus();
  });
}

// Activation{POT,Symmetric}Quantizer.
absl::StatusOr<std::unique_ptr<Kernel>> MakeSymmetricActivation(
    const KernelInfo& info, bool power_of_two) {
  ASSIGN_OR_RETURN(const float threshold, RequiredFloat(info, "threshold"));
  ASSIGN_OR_RETURN(const int64_t is_signed, RequiredInt(info, "signed", 0, 1));
  ASSIGN_OR_RETURN(const int64_t bits,
                   RequiredInt(info, "num_bits", 1, kMaxBits));
  if (!(threshold > 0)) return info.Error("threshold must be positive");
  if (power_of_two && std::exp2(std::round(std::log2(threshold))) !=
                          static_cast<double>(threshold)) {
    return info.Error(
        absl::StrCat("threshold ", threshold, " is not a power of two"));
  }
  // mct_quantizers computes the bounds in float64 from the float32
  // attribute; torch applies them to a float32 tensor.
  const double t = threshold;
  const double scale_d = t / std::exp2(is_signed ? bits - 1 : bits);
  const float scale = static_cast<float>(scale_d);
  const float lo = is_signed ? static_cast<float>(-t) : 0.0f;
  const float hi = static_cast<float>(t - scale_d);
  return MakeActivationKernel([=](float v) {
    const float c = std::fmin(std::fmax(v, lo), hi);
    return std::nearbyint(c / scale) * scale;
  });
}

// mct_quantizers.common.quant_utils.adjust_range_to_include_zero (numpy,
// float64 scalars).
void AdjustRangeToIncludeZero(double range_min, double range_max, int64_t bits,
                              double* a, double* b) {
  const double scale = (range_max - range_min) / (std::exp2(bits) - 1);
  double min_adj = scale * std::nearbyint(range_min / scale);
  double max_adj = range_max - range_min + min_adj;
  const bool min_positive = range_min > 0;
  const bool max_negative = range_max < 0;
  const bool mid = !min_positive && !max_negative;
  min_adj = min_adj * mid + max_negative * range_min;
  max_adj = max_adj * mid + min_positive * range_max;
  *a = std::fmin(min_adj, 0.0);
  *b = std::fmax(max_adj, 0.0);
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeUniformActivation(
    const KernelInfo& info) {
  ASSIGN_OR_RETURN(const float range_min, RequiredFloat(info, "min_range"));
  ASSIGN_OR_RETURN(const float range_max, RequiredFloat(info, "max_range"));
  ASSIGN_OR_RETURN(const int64_t bits,
                   RequiredInt(info, "num_bits", 1, kMaxBits));
  if (!(range_max > range_min)) {
    return info.Error(absl::StrCat("min_range ", range_min,
                                   " must be below max_range ", range_max));
  }
  double a_d = 0, b_d = 0;
  AdjustRangeToIncludeZero(range_min, range_max, bits, &a_d, &b_d);
  const float a = static_cast<float>(a_d);
  const float b = static_cast<float>(b_d);
  const float delta = static_cast<float>((b_d - a_d) / (std::exp2(bits) - 1));
  return MakeActivationKernel([=](float v) {
    const float c = std::fmin(std::fmax(v, a), b);
    return delta * std::nearbyint((c - a) / delta) + a;
  });
}

// ---- Weights ----------------------------------------------------------------

// Per-channel layout: element i uses parameter (i / inner) % count.
struct ChannelLayout {
  int64_t count = 1, inner = 1;
};

absl::StatusOr<ChannelLayout> LayoutFor(const KernelContext& ctx,
                                        const Tensor& x, bool per_channel,
                                        int64_t axis, size_t num_params) {
  ChannelLayout l;
  if (!per_channel) {
    if (num_params != 1) {
      return ctx.Error(absl::StrCat("per-tensor quantizer has ", num_params,
                                    " parameters, expected 1"));
    }
    return l;
  }
  if (axis < 0 || axis >= x.rank()) {
    return ctx.Error(
        absl::StrCat("channel_axis ", axis, " is outside ", x.DebugString()));
  }
  if (x.dim(axis) != static_cast<int64_t>(num_params)) {
    return ctx.Error(absl::StrCat(num_params, " per-channel parameters for ",
                                  x.DebugString(), " along axis ", axis));
  }
  l.count = x.dim(axis);
  for (int64_t d = axis + 1; d < x.rank(); ++d) l.inner *= x.dim(d);
  return l;
}

struct WeightAttrs {
  int64_t bits = 8;
  bool per_channel = false;
  int64_t axis = 0;
};

absl::StatusOr<WeightAttrs> ReadWeightAttrs(const KernelInfo& info) {
  WeightAttrs w;
  ASSIGN_OR_RETURN(w.bits, RequiredInt(info, "num_bits", 1, kMaxBits));
  ASSIGN_OR_RETURN(const int64_t pc, RequiredInt(info, "per_channel", 0, 1));
  w.per_channel = pc != 0;
  ASSIGN_OR_RETURN(w.axis, RequiredInt(info, "channel_axis", 0, 64));
  return w;
}

// Element-wise weight quantizer over per-channel parameters.
template <typename Params, typename Fn>
std::unique_ptr<Kernel> MakeWeightKernel(WeightAttrs attrs,
                                         std::vector<Params> params, Fn fn) {
  return MakeKernel([=](KernelContext& ctx) -> absl::Status {
    const Tensor& x = *ctx.input(0);
    RETURN_IF_ERROR(RequireFloatInput(ctx, x));
    ASSIGN_OR_RETURN(ChannelLayout l, LayoutFor(ctx, x, attrs.per_channel,
                                                attrs.axis, params.size()));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(0, DType::kFloat, x.shape()));
    const float* in = x.data<float>();
    float* out = y->mutable_data<float>();
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      out[i] = fn(in[i], params[(i / l.inner) % l.count]);
    }
    return absl::OkStatus();
  });
}

struct SymParams {
  float scale, lo, hi;
};

// Weights{POT,Symmetric}Quantizer: inputs W, threshold.
absl::StatusOr<std::unique_ptr<Kernel>> MakeSymmetricWeights(
    const KernelInfo& info, bool power_of_two) {
  ASSIGN_OR_RETURN(WeightAttrs attrs, ReadWeightAttrs(info));
  ASSIGN_OR_RETURN(std::vector<float> t, ConstantFloats(info, 1, "threshold"));
  std::vector<SymParams> params;
  const float div = std::exp2f(static_cast<float>(attrs.bits - 1));
  for (float v : t) {
    if (!(v > 0)) return info.Error("thresholds must be positive");
    if (power_of_two && std::exp2f(std::round(std::log2f(v))) != v) {
      return info.Error(
          absl::StrCat("threshold ", v, " is not a power of two"));
    }
    const float scale = v / div;
    params.push_back({scale, -v, v - scale});
  }
  return MakeWeightKernel(
      attrs, std::move(params), [](float w, const SymParams& p) {
        const float c = w > p.hi ? p.hi : w < p.lo ? p.lo : w;
        return std::nearbyint(c / p.scale) * p.scale;
      });
}

struct UniformParams {
  float a, b, delta;
};

// WeightsUniformQuantizer: inputs W, min_range, max_range. The range
// adjustment is mct_quantizers' torch fix_range_to_include_zero (float32).
absl::StatusOr<std::unique_ptr<Kernel>> MakeUniformWeights(
    const KernelInfo& info) {
  ASSIGN_OR_RETURN(WeightAttrs attrs, ReadWeightAttrs(info));
  ASSIGN_OR_RETURN(std::vector<float> mins,
                   ConstantFloats(info, 1, "min_range"));
  ASSIGN_OR_RETURN(std::vector<float> maxs,
                   ConstantFloats(info, 2, "max_range"));
  if (mins.size() != maxs.size()) {
    return info.Error("min_range and max_range differ in length");
  }
  const float levels = std::exp2f(static_cast<float>(attrs.bits)) - 1.0f;
  std::vector<UniformParams> params;
  for (size_t c = 0; c < mins.size(); ++c) {
    const float mn = mins[c], mx = maxs[c];
    if (!(mx > mn)) {
      return info.Error(absl::StrCat("channel ", c, ": min_range ", mn,
                                     " must be below max_range ", mx));
    }
    const float min_positive = mn > 0 ? 1.0f : 0.0f;
    const float max_negative = mx < 0 ? 1.0f : 0.0f;
    const float mid = (mn <= 0 && mx >= 0) ? 1.0f : 0.0f;
    const float scale = (mx - mn) / levels;
    float a = scale * std::nearbyint(mn / scale);
    float b = mx - mn + a;
    a = a * mid + max_negative * mn;
    b = b * mid + min_positive * mx;
    params.push_back({a, b, (b - a) / levels});
  }
  return MakeWeightKernel(attrs, std::move(params),
                          [](float w, const UniformParams& p) {
                            const float c = w > p.b ? p.b : w < p.a ? p.a : w;
                            return std::nearbyint(c / p.delta) * p.delta;
                          });
}

// WeightsLUT{POT,Symmetric}Quantizer: inputs W, lut_values, threshold.
absl::StatusOr<std::unique_ptr<Kernel>> MakeLutWeights(const KernelInfo& info) {
  ASSIGN_OR_RETURN(WeightAttrs attrs, ReadWeightAttrs(info));
  ASSIGN_OR_RETURN(const int64_t lut_bits,
                   RequiredInt(info, "lut_values_bitwidth", 2, kMaxBits));
  ASSIGN_OR_RETURN(const float eps, RequiredFloat(info, "eps"));
  ASSIGN_OR_RETURN(std::vector<float> lut,
                   ConstantFloats(info, 1, "lut_values"));
  ASSIGN_OR_RETURN(std::vector<float> t, ConstantFloats(info, 2, "threshold"));
  const float half = std::exp2f(static_cast<float>(lut_bits - 1));
  const float clip_min = -half, clip_max = half - 1.0f;
  std::vector<float> params = t;
  return MakeWeightKernel(
      attrs, std::move(params),
      [lut, half, clip_min, clip_max, eps](float w, float threshold) {
        float v = (w / (threshold + eps)) * half;
        v = std::fmin(std::fmax(v, clip_min), clip_max);
        size_t best = 0;
        float best_d = std::fabs(v - lut[0]);
        for (size_t k = 1; k < lut.size(); ++k) {
          const float d = std::fabs(v - lut[k]);
          if (d < best_d) {
            best_d = d;
            best = k;
          }
        }
        return (lut[best] / half) * threshold;
      });
}

void AddMctq(KernelRegistry& r, absl::string_view op, KernelFactory f) {
  r.Register(QualifiedOpType(kMctqDomain, op), std::move(f));
}

}  // namespace

void RegisterMctqQuantizers(KernelRegistry& r) {
  AddMctq(r, kActivationPotQuantizer, [](const KernelInfo& info) {
    return MakeSymmetricActivation(info, true);
  });
  AddMctq(r, kActivationSymmetricQuantizer, [](const KernelInfo& info) {
    return MakeSymmetricActivation(info, false);
  });
  AddMctq(r, kActivationUniformQuantizer, MakeUniformActivation);
  AddMctq(r, kWeightsPotQuantizer, [](const KernelInfo& info) {
    return MakeSymmetricWeights(info, true);
  });
  AddMctq(r, kWeightsSymmetricQuantizer, [](const KernelInfo& info) {
    return MakeSymmetricWeights(info, false);
  });
  AddMctq(r, kWeightsUniformQuantizer, MakeUniformWeights);
  AddMctq(r, kWeightsLutPotQuantizer, MakeLutWeights);
  AddMctq(r, kWeightsLutSymmetricQuantizer, MakeLutWeights);
}

}  // namespace quantd::exec
