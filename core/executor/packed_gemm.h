// A constant weight matrix multiplied many times (a Conv's kernel, once per
// sample and column tile), packed the way Eigen's GEMM packs it once per
// blocking instead of once per product.
//
// Y[rows x width] (+)= W[row0 .. row0 + rows) * X[depth x width], all
// row-major, is what Eigen's `ym.noalias() (+)= wm * cm` computes: Eigen
// evaluates it as the column-major Y^T = X^T * W^T, whose right-hand side
// (W^T) it packs for every call. Multiply runs the same sequence of Eigen's
// own packing and micro-kernel calls with the same blocking sizes, taking
// the packed W^T blocks from a cache: the same bits as Eigen's product
// (PackedWeightsTest in kernels_test checks it bit for bit).
#ifndef QUANTD_CORE_EXECUTOR_PACKED_GEMM_H_
#define QUANTD_CORE_EXECUTOR_PACKED_GEMM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace quantd::exec {

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

  // Bytes of packed blocks held (for tests).
  int64_t packed_bytes() const;

 private:
  struct Blocks;
  // (row0, rows, kc, nc): the blocks of one row range under one blocking.
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;
  const Blocks* BlocksFor(int64_t row0, int64_t rows, int64_t kc,
                          int64_t nc) const;

  const float* w_;
  int64_t total_rows_, depth_;
  mutable std::mutex mu_;
  mutable std::map<Key, std::unique_ptr<Blocks>> cache_;  // guarded by mu_
  mutable int64_t held_bytes_ = 0;                        // guarded by mu_
};

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_PACKED_GEMM_H_
