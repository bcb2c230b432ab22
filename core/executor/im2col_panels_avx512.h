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
#include <vector>

#include "core/executor/packed_gemm.h"

namespace quantd::exec {

// One row block's positions [i0, i0 + count) of a convolution's product
// (output positions s.p0 + i), laid out once for every depth and column
// block the product multiplies them with.
class Im2ColPanels {
 public:
  // Whether the kernel takes `s`: UseFullPanelsAvx512() (the CPU has
  // AVX-512F), the layer is unit-stride along the width and its planes
  // (H x W) are under 2^30 elements (offsets are 32-bit).
  static bool Takes(const Im2ColSource& s);

  // Of a row block of `rows`, those in Eigen's 3-packet panels (24 rows)
  // and its 2-packet panel (16 of the rest, when there are): one
  // accumulator per output, one multiply-add per depth step in order, in
  // both (gebp_kernel's 3pX4/3pX1 and 2pX4/2pX1 micro kernels). Its
  // 1-packet panel alternates two accumulators, and narrower rows sum
  // otherwise.
  static int64_t Rows(int64_t rows);

  Im2ColPanels(const Im2ColSource& s, int64_t i0, int64_t count);

  // res[j * ld + i] = fma(acc(i, j), 1, res[j * ld + i]) for the block's
  // positions i and columns j in [0, cols), acc(i, j) the in-order sum over
  // im2col rows [k2, k2 + depth) of col(i, k) * w(k, j). `b` is the packed
  // W^T block of those rows and columns in gemm_pack_rhs's nr = 4 layout
  // (4-column panels, then single columns, each `depth` steps long).
  void Multiply(int64_t k2, int64_t depth, const float* b, int64_t cols,
                float* res, int64_t ld) const;

  // Where one tap of one channel plane reads a register of positions: up
  // to two runs of neighbours (the positions may continue on the next
  // output row), each a masked load.
  struct TapLoad {
    int32_t offset[2];  // of lane 0's would-be value, from the plane's start
    uint16_t mask[2];   // lanes inside the image, per run (0: none)
  };
  // The positions of one register: its first index and count.
  struct Positions {
    int64_t i;
    int n;
  };

 private:
  Im2ColSource s_;
  int64_t khw_;
  std::vector<Positions> vectors_;  // registers of up to 16 positions
  std::vector<TapLoad> loads_;      // per register, per tap of a plane
};

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_IM2COL_PANELS_AVX512_H_
