// Eigen's 3- and 2-packet row panels (full_panels_avx512.h) of a
// convolution that is unit-stride along the width, computed straight from
// the image.
//
// In Conv's product Y^T = X^T W^T the rows are output positions and the
// depth is im2col's (channel, tap) rows. An output whose position falls in
// one of the micro kernel's 24-row or 16-row panels gets, in a depth block,
// one accumulator started at 0, one fused multiply-add per depth step in
// order and one fused multiply-add with 1 into the destination. This
// kernel keeps that order per output, but holds three registers of 16
// positions (each over at most two output rows) times 8 output channels in
// 24 accumulators: each tap's 16 values are one or two masked loads from
// the image, used by all 8 channels, so nothing is packed (packing the
// columns takes as long as multiplying them in a layer with 24 output
// channels). Same bits as the packed product.
#ifndef QUANTD_CORE_EXECUTOR_IM2COL_PANELS_AVX512_H_
#define QUANTD_CORE_EXECUTOR_IM2COL_PANELS_AVX512_H_

#include <cstdint>

#include "core/executor/packed_gemm.h"

namespace quantd::exec {

inline constexpr int64_t kIm2ColPanelsMaxPlane = int64_t{1} << 30;

// res[j * ld + i] = fma(acc(i, j), 1, res[j * ld + i]) for the call's
// positions i in [i0, i0 + count) (output positions s.p0 + i) and columns
// j in [0, cols), acc(i, j) the in-order sum over im2col rows [k2, k2 +
// depth) of col(i, k) * w(k, j). `b` is the packed W^T block of those rows
// and columns in gemm_pack_rhs's nr = 4 layout (4-column panels, then
// single columns, each `depth` steps long). Needs UseFullPanelsAvx512(),
// s.SW == 1 and planes (s.H * s.W) under kIm2ColPanelsMaxPlane elements
// (offsets within a plane are 32-bit).
void MultiplyIm2ColPanelsAvx512(const Im2ColSource& s, int64_t i0,
                                int64_t count, int64_t k2, int64_t depth,
                                const float* b, int64_t cols, float* res,
                                int64_t ld);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_IM2COL_PANELS_AVX512_H_
