// Float convolution building blocks (used by Conv and ConvTranspose):
// im2col/col2im and the GEMM-based and depthwise forward passes.
#ifndef QUANTD_CORE_EXECUTOR_CONV_KERNELS_H_
#define QUANTD_CORE_EXECUTOR_CONV_KERNELS_H_

#include <cstdint>
#include <optional>

#include "core/executor/packed_gemm.h"
#include "core/executor/window.h"
#include "core/runtime/thread_pool.h"

namespace quantd::exec {

struct ConvShape {
  WindowGeometry geo;
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  int64_t in_size = 1;      // product of input spatial dims
  int64_t out_size = 1;     // product of output spatial dims
  int64_t kernel_size = 1;  // product of kernel dims
};

// Im2Col's columns of a 1-D (as height 1) or 2-D layer as an image-side
// view for PackedWeights::MultiplyIm2Col and Im2Col itself; nullopt for
// other ranks.
std::optional<Im2ColSource> Im2ColSourceOf(const ConvShape& s, const float* x,
                                           int64_t channels, int64_t p0);

// Fills col[row * width + (p - p0)] for rows (c, k...) of one group's
// channels and output positions p in [p0, p0 + width); out-of-image taps are 0.
void Im2Col(const ConvShape& s, const float* x, int64_t channels, int64_t p0,
            int64_t width, float* col);

// Adds col (rows (c, k...), columns = input-grid output positions) back into
// the image: the adjoint of Im2Col (used by ConvTranspose).
void Col2Im(const ConvShape& s, const float* col, int64_t channels, float* x);

// Whether computing a rows x depth by depth x cols product (cols >= the
// narrowest tile's `min_cols`) in blocks of `block` rows gives the bits of
// one product: ConvForward splits rows into blocks only to share them with
// pool workers, and keeps one block without workers where this holds.
bool RowBlocksAreBitNeutral(int64_t rows, int64_t block, int64_t depth,
                            int64_t min_cols);

// y[N, M, out...] = conv(x[N, C, in...], w[M, C/group, k...]) + bias[M].
// bias may be null. Splits work over (batch, group, column tiles, and row
// blocks when a small layer needs more items for the pool's workers); the
// result does not depend on the pool (RowBlocksAreBitNeutral).
// `packed`, when given, holds w packed for its GEMMs (packed->data() == w);
// the result is the same with and without it.
void ConvForward(const ConvShape& s, const float* x, const float* w,
                 const float* bias, float* y, ThreadPool* pool,
                 const PackedWeights* packed = nullptr);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_CONV_KERNELS_H_
