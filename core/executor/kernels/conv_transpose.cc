// ConvTranspose: the adjoint of Conv. full = col2im(W^T X) over the
// un-padded output s(in-1) + (k-1)d + 1; y = crop(full, pads) + bias.
#include "core/executor/kernels/conv_transpose.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/executor/conv_kernels.h"
#include "core/executor/gemm.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

int64_t FloorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

struct ConvTransposeAttrs {
  WindowAttrs window;
  int64_t group = 1;
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;
};

absl::StatusOr<ConvTransposeAttrs> ReadConvTransposeAttrs(const Node& node) {
  ConvTransposeAttrs a;
  ASSIGN_OR_RETURN(a.window, ReadWindowAttrs(node));
  a.group = node.GetInt("group", 1);
  a.output_padding = node.GetInts("output_padding");
  a.output_shape = node.GetInts("output_shape");
  if (a.group <= 0) return NodeError(node, "group must be positive");
  for (int64_t v : a.output_shape) {
    if (v < 0) return NodeError(node, "output_shape must be non-negative");
  }
  return a;
}

// The axes from the strides, dilations, pads, auto_pad, output_padding and
// output_shape, on x and w of equal rank >= 3.
absl::StatusOr<ConvTransposeAxes> ResolveAxes(const Node& node,
                                              const ConvTransposeAttrs& a,
                                              const std::vector<int64_t>& x,
                                              const std::vector<int64_t>& w) {
  const int r = static_cast<int>(x.size()) - 2;
  const WindowAttrs& wa = a.window;
  auto get = [&](const std::vector<int64_t>& v, int i, int64_t def) {
    return v.empty() ? def : v[i];
  };
  if ((!wa.strides.empty() && wa.strides.size() != size_t(r)) ||
      (!wa.dilations.empty() && wa.dilations.size() != size_t(r)) ||
      (!wa.pads.empty() && wa.pads.size() != size_t(2 * r)) ||
      (!a.output_padding.empty() && a.output_padding.size() != size_t(r))) {
    return NodeError(node,
                     "strides/dilations/pads/output_padding length mismatch");
  }
  std::vector<int64_t> out_spec = a.output_shape;
  if (out_spec.size() == size_t(r + 2))
    out_spec.erase(out_spec.begin(), out_spec.begin() + 2);
  if (!out_spec.empty() && out_spec.size() != size_t(r)) {
    return NodeError(node, "output_shape has the wrong length");
  }
  ConvTransposeAxes axes;
  axes.full.assign(r, 0);
  axes.out.assign(r, 0);
  axes.begin.assign(r, 0);
  for (int i = 0; i < r; ++i) {
    const int64_t in = x[i + 2];
    const int64_t st = get(wa.strides, i, 1);
    const int64_t op = get(a.output_padding, i, 0);
    const int64_t full =
        st * (in - 1) + (w[i + 2] - 1) * get(wa.dilations, i, 1) + 1;
    int64_t& out = axes.out[i];
    axes.full[i] = full;
    if (!out_spec.empty() || wa.auto_pad == AutoPad::kSameUpper ||
        wa.auto_pad == AutoPad::kSameLower) {
      out = out_spec.empty() ? in * st : out_spec[i];
      const int64_t total = full + op - out;
      axes.begin[i] = wa.auto_pad == AutoPad::kSameUpper
                          ? FloorDiv2(total)
                          : total - FloorDiv2(total);
    } else {
      const int64_t pb =
          wa.auto_pad == AutoPad::kValid ? 0 : get(wa.pads, i, 0);
      const int64_t pe =
          wa.auto_pad == AutoPad::kValid ? 0 : get(wa.pads, i + r, 0);
      out = full + op - pb - pe;
      axes.begin[i] = pb;
    }
    if (out < 0) return NodeError(node, "negative output size");
  }
  return axes;
}

// The geometry of the adjoint conv (full -> x) and the axes.
absl::Status ConvTransposeGeometry(KernelContext& ctx,
                                   const ConvTransposeAttrs& a, const Tensor& x,
                                   const Tensor& w, ConvShape* shape,
                                   std::vector<int64_t>* out_dims,
                                   std::vector<int64_t>* begin_offsets) {
  ASSIGN_OR_RETURN(ConvTransposeAxes axes,
                   ResolveAxes(ctx.node(), a, x.shape(), w.shape()));
  const int r = x.rank() - 2;
  const WindowAttrs& wa = a.window;
  ConvShape& s = *shape;
  s.geo.in = axes.full;
  s.geo.out.assign(x.shape().begin() + 2, x.shape().end());
  s.geo.kernel.assign(w.shape().begin() + 2, w.shape().end());
  s.geo.stride = wa.strides.empty() ? std::vector<int64_t>(r, 1) : wa.strides;
  s.geo.dilation =
      wa.dilations.empty() ? std::vector<int64_t>(r, 1) : wa.dilations;
  s.geo.pad_begin.assign(r, 0);
  s.geo.pad_end.assign(r, 0);
  for (int i = 0; i < r; ++i) {
    s.in_size *= s.geo.in[i];
    s.out_size *= s.geo.out[i];
    s.kernel_size *= s.geo.kernel[i];
  }
  *out_dims = std::move(axes.out);
  *begin_offsets = std::move(axes.begin);
  return absl::OkStatus();
}

// Non-overlapping 2-D taps (stride = kernel, no dilation) and no crop
// (the 2x2 stride-2 upsampling of decoders): every output element takes
// exactly one tap, so the zero fill, col2im's scatter-add and the crop
// collapse into one strided write of (0 + tap) + bias per element, the same
// float operations in the same order.
bool TakesOneTapPerOutput(int r, const ConvShape& s,
                          const std::vector<int64_t>& out,
                          const std::vector<int64_t>& begin) {
  bool direct = r == 2;
  for (int d = 0; d < r && direct; ++d) {
    direct = s.geo.stride[d] == s.geo.kernel[d] && s.geo.dilation[d] == 1 &&
             begin[d] == 0 && out[d] == s.geo.in[d] &&
             s.geo.in[d] == s.geo.out[d] * s.geo.kernel[d];
  }
  return direct;
}

// One output channel of a TakesOneTapPerOutput convolution from its
// columns `col` (kernel_size x out_size): output row h * KH + kh takes the
// taps (kh, 0 .. KW-1) of input row h, interleaved, so each row is written
// once, in order (a 2x2 upsampling's rows as pairs of floats).
void WriteTapsOfChannel(const ConvShape& s, const float* col, float bias,
                        float* yc) {
  const int64_t KH = s.geo.kernel[0], KW = s.geo.kernel[1];
  const int64_t H = s.geo.out[0], W = s.geo.out[1], FW = s.geo.in[1];
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t kh = 0; kh < KH; ++kh) {
      float* yr = yc + (h * KH + kh) * FW;
      const float* sr = col + kh * KW * s.out_size + h * W;
      if (KW == 2) {
        const float* s0 = sr;
        const float* s1 = sr + s.out_size;
        for (int64_t w = 0; w < W; ++w) {
          yr[2 * w] = (0.0f + s0[w]) + bias;
          yr[2 * w + 1] = (0.0f + s1[w]) + bias;
        }
        continue;
      }
      for (int64_t w = 0; w < W; ++w) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          yr[w * KW + kw] = (0.0f + sr[kw * s.out_size + w]) + bias;
        }
      }
    }
  }
}

// One output channel through col2im into `full` (in_size floats, zeroed
// here) and cropped / padded into `yc` with the `begin` offset.
void Col2ImAndCropChannel(const ConvShape& s, const float* col, float bias,
                          const std::vector<int64_t>& out,
                          const std::vector<int64_t>& begin, int64_t out_size,
                          float* full, float* yc) {
  const int r = static_cast<int>(out.size());
  std::fill_n(full, s.in_size, 0.0f);
  Col2Im(s, col, 1, full);
  if (r == 2) {
    const int64_t FH = s.geo.in[0], FW = s.geo.in[1];
    for (int64_t oh = 0; oh < out[0]; ++oh) {
      float* yr = yc + oh * out[1];
      const int64_t fh = oh + begin[0];
      if (fh < 0 || fh >= FH) {
        std::fill_n(yr, out[1], bias);
        continue;
      }
      const float* fr = full + fh * FW;
      for (int64_t ow = 0; ow < out[1]; ++ow) {
        const int64_t fw = ow + begin[1];
        yr[ow] = (fw >= 0 && fw < FW ? fr[fw] : 0.0f) + bias;
      }
    }
    return;
  }
  std::vector<int64_t> idx(r, 0);
  for (int64_t p = 0; p < out_size; ++p) {
    int64_t rem = p, off = 0;
    bool inside = true;
    for (int d = r - 1; d >= 0; --d) {
      idx[d] = rem % out[d];
      rem /= out[d];
    }
    for (int d = 0; d < r; ++d) {
      const int64_t f = idx[d] + begin[d];
      inside &= f >= 0 && f < s.geo.in[d];
      off = off * s.geo.in[d] + f;
    }
    yc[p] = (inside ? full[off] : 0.0f) + bias;
  }
}

absl::Status ComputeConvTranspose(KernelContext& ctx,
                                  const ConvTransposeAttrs& a) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor* b = ctx.input(2);
  if (x.dtype() != DType::kFloat || w.dtype() != DType::kFloat ||
      (b != nullptr && b->dtype() != DType::kFloat)) {
    return absl::UnimplementedError("only float ConvTranspose is supported");
  }
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return ctx.Error(absl::StrCat("input ", x.DebugString(), " and weight ",
                                  w.DebugString(),
                                  " must have the same rank >= 3"));
  }
  const int r = x.rank() - 2;
  const int64_t N = x.dim(0), C = x.dim(1), G = a.group;
  if (w.dim(0) != C || C % G != 0) {
    return ctx.Error(absl::StrCat("weight ", w.DebugString(),
                                  " does not match input ", x.DebugString(),
                                  " with group ", G));
  }
  const int64_t Cg = C / G, Mg = w.dim(1), M = Mg * G;
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != M)) {
    return ctx.Error(
        absl::StrCat("bias ", b->DebugString(), " expected [", M, "]"));
  }
  ConvShape s;  // geometry of the adjoint conv: full -> x
  std::vector<int64_t> out, begin;
  RETURN_IF_ERROR(ConvTransposeGeometry(ctx, a, x, w, &s, &out, &begin));
  std::vector<int64_t> out_shape = {N, M};
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  // Every element is written below (the crop, or the bias where the crop
  // falls outside): no zero fill.
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, DType::kFloat, out_shape));
  int64_t out_size = 1;
  for (int64_t v : out) out_size *= v;
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y->mutable_data<float>();
  const int64_t MK = Mg * s.kernel_size;
  if (NumElements({Mg, s.in_size}) < 0 || NumElements({MK, s.out_size}) < 0 ||
      Mg * s.in_size > ctx.max_tensor_bytes() / 4 ||
      MK * s.out_size > ctx.max_tensor_bytes() / 4) {
    return absl::ResourceExhaustedError("ConvTranspose workspace too large");
  }
  // One (image, group) item per outer chunk. A single item (batch 1, no
  // groups: decoder upsampling) instead splits its GEMM by column blocks and
  // its col2im/crop by output channel, which write disjoint outputs with the
  // same arithmetic: the split depends on N * G only, never on the pool.
  ThreadPool* inner_pool = N * G == 1 ? ctx.pool() : nullptr;
  const bool direct = TakesOneTapPerOutput(r, s, out, begin);
  ParallelFor(ctx.pool(), N * G, 1, [&](int64_t ib, int64_t ie) {
    // Not zero-filled: the GEMM writes all of `col`, and each channel's
    // part of `full` is zeroed just before its col2im.
    const std::unique_ptr<float[]> col(new float[MK * s.out_size]);
    const std::unique_ptr<float[]> full(direct ? nullptr
                                               : new float[Mg * s.in_size]);
    for (int64_t item = ib; item < ie; ++item) {
      const int64_t n = item / G, g = item % G;
      const float* wg = wp + g * Cg * MK;
      const float* xg = xp + (n * C + g * Cg) * s.out_size;
      constexpr int64_t kColBlock = 512;
      ParallelFor(inner_pool, (s.out_size + kColBlock - 1) / kColBlock, 1,
                  [&](int64_t cb, int64_t ce) {
                    for (int64_t blk = cb; blk < ce; ++blk) {
                      const int64_t p0 = blk * kColBlock;
                      const int64_t width =
                          std::min(kColBlock, s.out_size - p0);
                      // col = W^T x.
                      GemmBlock<float>(true, false, MK, width, Cg, 1.0f, wg, MK,
                                       xg + p0, s.out_size, col.get() + p0,
                                       s.out_size, false);
                    }
                  });
      ParallelFor(inner_pool, Mg, 1, [&](int64_t mb, int64_t me) {
        for (int64_t m = mb; m < me; ++m) {
          const int64_t oc = g * Mg + m;
          float* yc = yp + (n * M + oc) * out_size;
          const float bv = b ? b->data<float>()[oc] : 0.0f;
          const float* cm = col.get() + m * s.kernel_size * s.out_size;
          if (direct) {
            WriteTapsOfChannel(s, cm, bv, yc);
          } else {
            Col2ImAndCropChannel(s, cm, bv, out, begin, out_size,
                                 full.get() + m * s.in_size, yc);
          }
        }
      });
    }
  });
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConvTransposeAxes> ConvTransposeOutputAxes(
    const Node& node, const std::vector<int64_t>& x_shape,
    const std::vector<int64_t>& w_shape) {
  if (x_shape.size() < 3 || w_shape.size() != x_shape.size()) {
    return NodeError(node, "input and weight must have the same rank >= 3");
  }
  ASSIGN_OR_RETURN(ConvTransposeAttrs a, ReadConvTransposeAttrs(node));
  return ResolveAxes(node, a, x_shape, w_shape);
}

void RegisterConvTranspose(KernelRegistry& r) {
  r.Register(
      "ConvTranspose",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(ConvTransposeAttrs a,
                         ReadConvTransposeAttrs(info.node));
        return MakeKernel(
            [a](KernelContext& ctx) { return ComputeConvTranspose(ctx, a); });
      });
}

}  // namespace quantd::exec
