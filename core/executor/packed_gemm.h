// A constant weight matrix multiplied many times (a Conv's kernel, once per
// sample and column tile), packed the way Eigen's GEMM packs it once per
// blocking instead of once per product.
//
// Y[rows x width] (+)= W[row0 .. row0 + rows) * X[depth x width], all
// row-major, is what Eigen's `ym.noalias() (+)= wm * cm` computes: Eigen
// evaluates it as the column-major Y^T = X^T * W^T, whose right-hand side
// (W^T) it packs for every call. Multiply runs the same sequence of Eigen's
// own packing and micro-kernel calls with the same blocking sizes (the
// full panels on AVX-512 where the CPU has it: blocked_gemm.h), taking
// the packed W^T blocks from a cache: the same bits as Eigen's product
// (PackedWeightsTest in kernels_test checks it bit for bit).
//
// MultiplyIm2Col takes X as a convolution's im2col columns and packs them
// from the image (im2col_packing.h) instead of from a filled im2col buffer:
// the packed blocks, and so every bit of Y, are the same, and the copy into
// the buffer (up to a sixth of a 3x3 layer's time) is gone.
#ifndef QUANTD_CORE_EXECUTOR_PACKED_GEMM_H_
#define QUANTD_CORE_EXECUTOR_PACKED_GEMM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace quantd::exec {

// One image's im2col columns of a 2-D convolution (1-D as H = KH = 1): row
// (c, kh, kw), column j is x[c][oh * SH - PH + kh * DH][ow * SW - PW + kw *
// DW] for the output position p0 + j = oh * OW + ow, and 0 outside the image,
// as Im2Col (conv_kernels.h) fills them.
struct Im2ColSource {
  const float* x = nullptr;  // [channels, H, W]
  int64_t channels = 0, H = 1, W = 1, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1,
          DW = 1, PH = 0, PW = 0, OW = 1, p0 = 0;
};

// Gives Eigen one set of cache sizes, so every product of the process
// blocks, and rounds, the same way on any machine (packed_gemm.cc). Runs
// once as the executor library loads; calling it again changes nothing.
void PinGemmCacheSizes();

class PackedWeights {
 public:
  // `w` is [total_rows x depth], row-major; it is read while packing, so it
  // must stay alive and unchanged as long as this object is used.
  PackedWeights(const float* w, int64_t total_rows, int64_t depth);
  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  const float* data() const { return w_; }
  int64_t depth() const { return depth_; }

  // Y = W[row0, row0 + rows) * X, or Y += that when `accumulate`. X is
  // [depth x width] with row stride ldx, Y [rows x width] with row stride
  // ldy. Returns false, doing nothing, where Eigen would not take its
  // blocked GEMM (a coefficient-based product for depth + rows + width < 20,
  // a matrix-vector one for one row or one column) or the cache is full:
  // the caller then multiplies with Eigen itself.
  bool Multiply(int64_t row0, int64_t rows, const float* x, int64_t ldx,
                int64_t width, float* y, int64_t ldy, bool accumulate) const;

  // Multiply with X the `width` im2col columns of `src` (depth must be
  // channels * KH * KW); the same bits as Multiply on Im2Col's buffer, and
  // false in the same cases.
  bool MultiplyIm2Col(int64_t row0, int64_t rows, const Im2ColSource& src,
                      int64_t width, float* y, int64_t ldy,
                      bool accumulate) const;

  // Bytes of packed blocks held (for tests).
  int64_t packed_bytes() const;

 private:
  struct Blocks;
  // (row0, rows, kc, nc): the blocks of one row range under one blocking.
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;
  const Blocks* BlocksFor(int64_t row0, int64_t rows, int64_t kc,
                          int64_t nc) const;
  // Multiply with X^T's blocks packed by pack_x(a, i2, k2, depth, cols)
  // as Eigen's gemm_pack_lhs packs them (packed_gemm.cc). With `image`,
  // the rows of each block's full panels are computed from it
  // (im2col_panels_avx512.h) and only the rest are packed.
  template <typename PackX>
  bool MultiplyFrom(int64_t row0, int64_t rows, const PackX& pack_x,
                    int64_t width, float* y, int64_t ldy, bool accumulate,
                    const Im2ColSource* image = nullptr) const;

  const float* w_;
  int64_t total_rows_, depth_;
  mutable std::mutex mu_;
  mutable std::map<Key, std::unique_ptr<Blocks>> cache_;  // guarded by mu_
  mutable int64_t held_bytes_ = 0;                        // guarded by mu_
};

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_PACKED_GEMM_H_
