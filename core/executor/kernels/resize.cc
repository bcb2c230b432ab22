// Resize / Upsample: y[o] = sum over neighbours of w * x[i], separable per
// dim. Each output coordinate maps back with coordinate_transformation_mode
// (half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners,
// asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize), then takes
// nearest (round_prefer_floor/ceil, floor, ceil), linear or cubic
// (cubic_coeff_a, exclude_outside) weights, as ONNX's reference does.
// Resize-10 and Upsample use asymmetric coordinates and floor.
#include "core/executor/kernels/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class Aspect { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  Aspect aspect = Aspect::kStretch;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  std::vector<int64_t> axes;
  // Input positions: -1 when absent.
  int roi_input = -1, scales_input = -1, sizes_input = -1;
  std::vector<float> attr_scales;  // Upsample-7
};

struct Tap {
  int64_t index;
  double weight;
};

// Neighbours and weights of one output coordinate along one dim; returns
// false when tf_crop_and_resize extrapolates.
bool Taps(const ResizeAttrs& a, int64_t x, int64_t in, double scale,
          double roi_start, double roi_end, std::vector<Tap>* taps) {
  taps->clear();
  const double out_w = scale * in;  // the reference keeps it fractional
  double xo = 0;
  switch (a.coord) {
    case Coord::kHalfPixel:
      xo = (x + 0.5) / scale - 0.5;
      break;
    case Coord::kHalfPixelSymmetric: {
      const double adjustment = std::floor(out_w) / out_w;
      const double center = in / 2.0;
      const double offset = center * (1 - adjustment);
      xo = offset + (x + 0.5) / scale - 0.5;
      break;
    }
    case Coord::kPytorchHalfPixel:
      xo = out_w > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
      break;
    case Coord::kAlignCorners:
      xo = out_w == 1 ? 0 : x * (in - 1) / (out_w - 1);
      break;
    case Coord::kAsymmetric:
      xo = x / scale;
      break;
    case Coord::kTfHalfPixelForNn:
      xo = (x + 0.5) / scale;
      break;
    case Coord::kTfCropAndResize:
      xo = out_w > 1 ? x * (roi_end - roi_start) * (in - 1) / (out_w - 1)
                     : (roi_end - roi_start) * (in - 1) / 2;
      xo += roi_start * (in - 1);
      if (xo < 0 || xo > in - 1) return false;
      break;
  }
  const double fl = std::floor(xo);
  const bool integral = xo == fl;
  // ratio in (0, 1]: prefer the left neighbour of xo.
  const int64_t base = static_cast<int64_t>(integral ? fl - 1 : fl);
  const double ratio = xo - static_cast<double>(base);
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (a.mode == Mode::kNearest) {
    bool right;
    if (integral) {
      right = true;
    } else {
      switch (a.nearest) {
        case Nearest::kRoundPreferFloor:
          right = ratio > 0.5;
          break;
        case Nearest::kRoundPreferCeil:
          right = ratio >= 0.5;
          break;
        case Nearest::kFloor:
          right = false;
          break;
        case Nearest::kCeil:
        default:
          right = true;
          break;
      }
    }
    taps->push_back({clamp(right ? base + 1 : base), 1.0});
    return true;
  }
  std::vector<double> w;
  int64_t first;
  if (a.mode == Mode::kLinear) {
    w = {1 - ratio, ratio};
    first = base;
  } else {
    const double A = a.cubic_a, r = ratio, s = 1 - ratio;
    w = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
         ((A + 2) * r - (A + 3)) * r * r + 1,
         ((A + 2) * s - (A + 3)) * s * s + 1,
         ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
    first = base - 1;
  }
  if (a.exclude_outside) {
    double sum = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      const int64_t i = first + static_cast<int64_t>(k);
      if (i < 0 || i >= in) w[k] = 0;
      sum += w[k];
    }
    if (sum != 0) {
      for (double& v : w) v /= sum;
    }
  }
  for (size_t k = 0; k < w.size(); ++k) {
    if (w[k] != 0)
      taps->push_back({clamp(first + static_cast<int64_t>(k)), w[k]});
  }
  if (taps->empty()) taps->push_back({clamp(base), 0.0});
  return true;
}

// The output shape of a Resize and its scale per dim, from the scales
// attribute, the scales input or the sizes input (with the aspect policy);
// `axes` comes back normalized (all dims when none are given).
absl::Status ResizeOutputShape(KernelContext& ctx, const ResizeAttrs& a,
                               const Tensor& x, std::vector<int64_t>* axes_out,
                               std::vector<double>* scales_out,
                               std::vector<int64_t>* out_shape) {
  const int64_t r = x.rank();
  std::vector<int64_t>& axes = *axes_out;
  axes = a.axes;
  if (axes.empty()) {
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  }
  for (int64_t& ax : axes) {
    ASSIGN_OR_RETURN(ax, NormalizeAxis(ax, r, "axes"));
  }
  const int64_t na = static_cast<int64_t>(axes.size());
  std::vector<double>& scales = *scales_out;
  scales.assign(r, 1.0);
  std::vector<int64_t>& out = *out_shape;
  out = x.shape();
  const Tensor* sizes_t =
      a.sizes_input >= 0 ? ctx.input(a.sizes_input) : nullptr;
  const Tensor* scales_t =
      a.scales_input >= 0 ? ctx.input(a.scales_input) : nullptr;
  if (sizes_t != nullptr && sizes_t->num_elements() == 0) sizes_t = nullptr;
  if (scales_t != nullptr && scales_t->num_elements() == 0) scales_t = nullptr;
  if (!a.attr_scales.empty()) {
    if (static_cast<int64_t>(a.attr_scales.size()) != r) {
      return ctx.Error("scales length differs from input rank");
    }
    for (int64_t d = 0; d < r; ++d) scales[d] = a.attr_scales[d];
  } else if (scales_t != nullptr) {
    if (scales_t->dtype() != DType::kFloat || scales_t->num_elements() != na) {
      return ctx.Error(absl::StrCat("scales must be ", na, " floats, got ",
                                    scales_t->DebugString()));
    }
    for (int64_t i = 0; i < na; ++i)
      scales[axes[i]] = scales_t->data<float>()[i];
  } else if (sizes_t != nullptr) {
    ASSIGN_OR_RETURN(auto sizes, ReadInts(*sizes_t, "sizes"));
    if (static_cast<int64_t>(sizes.size()) != na) {
      return ctx.Error("sizes length differs from the number of axes");
    }
    if (a.aspect == Aspect::kStretch) {
      for (int64_t i = 0; i < na; ++i) {
        out[axes[i]] = sizes[i];
        scales[axes[i]] =
            x.dim(axes[i]) ? static_cast<double>(sizes[i]) / x.dim(axes[i]) : 1;
      }
    } else {
      double s = a.aspect == Aspect::kNotLarger ? 1e300 : 0;
      for (int64_t i = 0; i < na; ++i) {
        const double v = static_cast<double>(sizes[i]) / x.dim(axes[i]);
        s = a.aspect == Aspect::kNotLarger ? std::min(s, v) : std::max(s, v);
      }
      for (int64_t i = 0; i < na; ++i) {
        scales[axes[i]] = s;
        out[axes[i]] = static_cast<int64_t>(std::nearbyint(s * x.dim(axes[i])));
      }
    }
  } else {
    return ctx.Error("one of scales or sizes is required");
  }
  if (sizes_t == nullptr) {
    for (int64_t d = 0; d < r; ++d) {
      if (!(scales[d] > 0) || scales[d] > 1e6) {
        return ctx.Error(absl::StrCat("scale ", scales[d], " is not positive"));
      }
      out[d] = static_cast<int64_t>(std::floor(scales[d] * x.dim(d)));
    }
  }
  for (int64_t d = 0; d < r; ++d) {
    if (out[d] < 0 || (out[d] > 0 && x.dim(d) == 0)) {
      return ctx.Error("invalid output size");
    }
  }
  return absl::OkStatus();
}

// Per dim, per output coordinate: the input taps it reads and whether it
// lies inside the input (else it takes the extrapolation value).
absl::Status ResizeTaps(KernelContext& ctx, const ResizeAttrs& a,
                        const Tensor& x, const std::vector<int64_t>& axes,
                        const std::vector<double>& scales,
                        const std::vector<int64_t>& out,
                        std::vector<std::vector<std::vector<Tap>>>* taps_out,
                        std::vector<std::vector<char>>* inside_out) {
  const int64_t r = x.rank();
  const int64_t na = static_cast<int64_t>(axes.size());
  std::vector<double> roi_start(r, 0), roi_end(r, 1);
  if (a.coord == Coord::kTfCropAndResize && a.roi_input >= 0) {
    const Tensor* roi = ctx.input(a.roi_input);
    if (roi == nullptr || roi->num_elements() != 2 * na) {
      return ctx.Error("tf_crop_and_resize needs roi with 2 values per axis");
    }
    ASSIGN_OR_RETURN(Tensor rf, roi->CastToFloat());
    for (int64_t i = 0; i < na; ++i) {
      roi_start[axes[i]] = rf.data<float>()[i];
      roi_end[axes[i]] = rf.data<float>()[i + na];
    }
  }
  std::vector<std::vector<std::vector<Tap>>>& taps = *taps_out;
  taps.resize(r);
  std::vector<std::vector<char>>& inside = *inside_out;
  inside.resize(r);
  std::vector<Tap> tmp;
  for (int64_t d = 0; d < r; ++d) {
    taps[d].resize(out[d]);
    inside[d].resize(out[d]);
    for (int64_t o = 0; o < out[d]; ++o) {
      const bool identity = scales[d] == 1.0 && out[d] == x.dim(d) &&
                            a.coord != Coord::kTfCropAndResize;
      if (identity && a.mode != Mode::kNearest &&
          a.coord != Coord::kTfHalfPixelForNn) {
        taps[d][o] = {{o, 1.0}};
        inside[d][o] = 1;
        continue;
      }
      inside[d][o] =
          Taps(a, o, x.dim(d), scales[d], roi_start[d], roi_end[d], &tmp);
      taps[d][o] = tmp;
    }
  }
  return absl::OkStatus();
}

using DimTaps = std::vector<std::vector<std::vector<Tap>>>;

// Output element i's coordinates along each dim into idx; false when one of
// them lies outside the input (the output takes the extrapolation value).
bool OutputCoordinates(int64_t i, const std::vector<int64_t>& out,
                       const std::vector<std::vector<char>>& inside,
                       std::vector<int64_t>* idx) {
  int64_t rem = i;
  bool in_range = true;
  for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    (*idx)[d] = rem % out[d];
    rem /= out[d];
    in_range &= inside[d][(*idx)[d]] != 0;
  }
  return in_range;
}

// f(offset, weight) for every input element the output at idx reads: the
// tensor product of its taps along each dim, the weight their product in
// dim order; k is scratch of the rank's size.
template <typename F>
void ForEachTap(const DimTaps& taps, const std::vector<int64_t>& idx,
                const std::vector<int64_t>& strides, std::vector<int64_t>* k,
                F&& f) {
  const int64_t r = static_cast<int64_t>(idx.size());
  std::fill(k->begin(), k->end(), 0);
  for (;;) {
    double w = 1;
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) {
      const Tap& t = taps[d][idx[d]][(*k)[d]];
      w *= t.weight;
      off += t.index * strides[d];
    }
    f(off, w);
    int64_t d = r - 1;
    for (; d >= 0; --d) {
      if (++(*k)[d] < static_cast<int64_t>(taps[d][idx[d]].size())) break;
      (*k)[d] = 0;
    }
    if (d < 0) break;
  }
}

absl::Status ComputeResize(KernelContext& ctx, const ResizeAttrs& a) {
  const Tensor& x = *ctx.input(0);
  const int64_t r = x.rank();
  std::vector<int64_t> axes;
  std::vector<double> scales;
  std::vector<int64_t> out;
  RETURN_IF_ERROR(ResizeOutputShape(ctx, a, x, &axes, &scales, &out));
  std::vector<std::vector<std::vector<Tap>>> taps;
  std::vector<std::vector<char>> inside;
  RETURN_IF_ERROR(ResizeTaps(ctx, a, x, axes, scales, out, &taps, &inside));
  const std::vector<int64_t> strides = StridesOf(x.shape());
  return DispatchNumeric(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateUninitialized(0, x.dtype(), out));
    const T* in = x.data<T>();
    T* po = y->mutable_data<T>();
    const int64_t n = y->num_elements();
    bool single = r > 0;
    for (int64_t d = 0; d < r && single; ++d) {
      for (int64_t o = 0; o < out[d] && single; ++o) {
        single = inside[d][o] && taps[d][o].size() == 1 &&
                 taps[d][o][0].weight == 1.0;
      }
    }
    if (single && n > 0) {
      // Nearest (or identity) everywhere: rows of gathers along the last dim.
      const int64_t last = out[r - 1];
      std::vector<int64_t> src_last(last);
      for (int64_t o = 0; o < last; ++o) src_last[o] = taps[r - 1][o][0].index;
      // An integer upsampling of the last dim (source j / factor, as
      // nearest with asymmetric coordinates and floor gives): each source
      // element written `factor` times in a row, which vectorizes.
      int64_t factor = x.dim(r - 1) > 0 ? last / x.dim(r - 1) : 0;
      for (int64_t o = 0; o < last && factor > 0; ++o) {
        if (src_last[o] != o / factor) factor = 0;
      }
      if (factor > 0 && last % factor != 0) factor = 0;
      ParallelFor(ctx.pool(), n / last, std::max<int64_t>(1, 4096 / last),
                  [&](int64_t rb, int64_t re) {
                    int64_t prev = -1;
                    for (int64_t row = rb; row < re; ++row) {
                      int64_t rem = row, off = 0;
                      for (int64_t d = r - 2; d >= 0; --d) {
                        off += taps[d][rem % out[d]][0].index * strides[d];
                        rem /= out[d];
                      }
                      T* o = po + row * last;
                      // An upsampled row repeats the one before it: copy
                      // that instead of gathering again.
                      if (off == prev) {
                        std::copy_n(o - last, last, o);
                        continue;
                      }
                      prev = off;
                      const T* src = in + off;
                      if (factor == 2) {
                        for (int64_t j = 0; j < last / 2; ++j) {
                          o[2 * j] = o[2 * j + 1] = src[j];
                        }
                      } else if (factor > 0) {
                        for (int64_t j = 0; j < last / factor; ++j) {
                          std::fill_n(o + j * factor, factor, src[j]);
                        }
                      } else {
                        for (int64_t j = 0; j < last; ++j) {
                          o[j] = src[src_last[j]];
                        }
                      }
                    }
                  });
      return absl::OkStatus();
    }
    ParallelFor(ctx.pool(), n, 4096, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(r), k(r);
      for (int64_t i = b; i < e; ++i) {
        if (!OutputCoordinates(i, out, inside, &idx)) {
          po[i] = static_cast<T>(a.extrapolation);
          continue;
        }
        double acc = 0;
        ForEachTap(taps, idx, strides, &k, [&](int64_t off, double w) {
          acc += w * static_cast<double>(in[off]);
        });
        if constexpr (std::is_floating_point_v<T>) {
          po[i] = static_cast<T>(acc);
        } else {
          po[i] = static_cast<T>(std::nearbyint(acc));
        }
      }
    });
    return absl::OkStatus();
  });
}

absl::StatusOr<ResizeAttrs> ReadAttrs(const Node& n, int64_t opset,
                                      bool upsample) {
  ResizeAttrs a;
  const std::string mode = n.GetString("mode", "nearest");
  if (mode == "nearest") {
    a.mode = Mode::kNearest;
  } else if (mode == "linear" || mode == "bilinear") {
    a.mode = Mode::kLinear;
  } else if (mode == "cubic") {
    a.mode = Mode::kCubic;
  } else {
    return NodeError(n, absl::StrCat("unknown mode '", mode, "'"));
  }
  if (upsample || opset < 11) {
    a.coord = Coord::kAsymmetric;
    a.nearest = Nearest::kFloor;
    if (upsample && opset < 9) {
      a.attr_scales = n.GetFloats("scales");
      if (a.attr_scales.empty()) return NodeError(n, "missing 'scales'");
    } else {
      a.scales_input = 1;
    }
    return a;
  }
  const std::string coord =
      n.GetString("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") {
    a.coord = Coord::kHalfPixel;
  } else if (coord == "half_pixel_symmetric") {
    a.coord = Coord::kHalfPixelSymmetric;
  } else if (coord == "pytorch_half_pixel") {
    a.coord = Coord::kPytorchHalfPixel;
  } else if (coord == "align_corners") {
    a.coord = Coord::kAlignCorners;
  } else if (coord == "asymmetric") {
    a.coord = Coord::kAsymmetric;
  } else if (coord == "tf_half_pixel_for_nn") {
    a.coord = Coord::kTfHalfPixelForNn;
  } else if (coord == "tf_crop_and_resize") {
    a.coord = Coord::kTfCropAndResize;
  } else {
    return NodeError(n, absl::StrCat("unknown coordinate_transformation_mode '",
                                     coord, "'"));
  }
  const std::string nearest = n.GetString("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") {
    a.nearest = Nearest::kRoundPreferFloor;
  } else if (nearest == "round_prefer_ceil") {
    a.nearest = Nearest::kRoundPreferCeil;
  } else if (nearest == "floor") {
    a.nearest = Nearest::kFloor;
  } else if (nearest == "ceil") {
    a.nearest = Nearest::kCeil;
  } else {
    return NodeError(n, absl::StrCat("unknown nearest_mode '", nearest, "'"));
  }
  const std::string aspect = n.GetString("keep_aspect_ratio_policy", "stretch");
  if (aspect == "stretch") {
    a.aspect = Aspect::kStretch;
  } else if (aspect == "not_larger") {
    a.aspect = Aspect::kNotLarger;
  } else if (aspect == "not_smaller") {
    a.aspect = Aspect::kNotSmaller;
  } else {
    return NodeError(
        n, absl::StrCat("unknown keep_aspect_ratio_policy '", aspect, "'"));
  }
  if (n.GetInt("antialias", 0) != 0) {
    return absl::UnimplementedError(
        absl::StrCat(n.Label(), ": antialias is not supported"));
  }
  a.cubic_a = n.GetFloat("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.GetInt("exclude_outside", 0) != 0;
  a.extrapolation = n.GetFloat("extrapolation_value", 0.0f);
  a.axes = n.GetInts("axes");
  a.roi_input = 1;
  a.scales_input = 2;
  a.sizes_input = 3;
  return a;
}

}  // namespace

absl::StatusOr<Tensor> ResizeAdjoint(const Node& node, int64_t opset,
                                     const std::vector<const Tensor*>& inputs,
                                     const Tensor& dy) {
  if (inputs.empty() || inputs[0] == nullptr) {
    return NodeError(node, "no input");
  }
  const Tensor& x = *inputs[0];
  if (x.dtype() != DType::kFloat || dy.dtype() != DType::kFloat) {
    return NodeError(node, "the adjoint takes float tensors");
  }
  ASSIGN_OR_RETURN(ResizeAttrs a,
                   ReadAttrs(node, opset, node.op_type == "Upsample"));
  std::vector<Tensor> unused(1);
  KernelContext ctx(node, inputs, &unused, nullptr,
                    std::numeric_limits<int64_t>::max());
  std::vector<int64_t> axes, out;
  std::vector<double> scales;
  RETURN_IF_ERROR(ResizeOutputShape(ctx, a, x, &axes, &scales, &out));
  if (dy.shape() != out) {
    return NodeError(node,
                     absl::StrCat("the output gradient is ", dy.DebugString(),
                                  ", the output ", absl::StrJoin(out, "x")));
  }
  DimTaps taps;
  std::vector<std::vector<char>> inside;
  RETURN_IF_ERROR(ResizeTaps(ctx, a, x, axes, scales, out, &taps, &inside));
  // The forward's loop with the gather turned into a scatter, summed in
  // double: outputs share taps, so it runs on one thread.
  const int64_t r = x.rank();
  const std::vector<int64_t> strides = StridesOf(x.shape());
  std::vector<double> acc(x.num_elements(), 0.0);
  const float* g = dy.data<float>();
  std::vector<int64_t> idx(r), k(r);
  for (int64_t i = 0; i < dy.num_elements(); ++i) {
    if (!OutputCoordinates(i, out, inside, &idx) || g[i] == 0) continue;
    ForEachTap(taps, idx, strides, &k,
               [&](int64_t off, double w) { acc[off] += w * g[i]; });
  }
  Tensor dx(DType::kFloat, x.shape());
  std::copy(acc.begin(), acc.end(), dx.mutable_data<float>());
  return dx;
}

void RegisterResize(KernelRegistry& r) {
  r.Register(
      "Resize",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(ResizeAttrs a,
                         ReadAttrs(info.node, info.opset, false));
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputeResize(ctx, a); });
      });
  r.Register(
      "Upsample",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(ResizeAttrs a, ReadAttrs(info.node, info.opset, true));
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputeResize(ctx, a); });
      });
}

}  // namespace quantd::exec
