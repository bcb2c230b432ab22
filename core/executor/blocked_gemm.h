// Eigen 3.4's blocked GEMM, step by step, with the full panels on AVX-512.
//
// For a product Eigen computes with its blocked GEMM, BlockedGemm runs the
// same sequence of Eigen's own calls as general_matrix_matrix_product's
// sequential path (Eigen/src/Core/products/GeneralMatrixMatrix.h): the
// blocking of gemm_blocking_space for the same sizes, gemm_pack_lhs and
// gemm_pack_rhs, and per block gebp_kernel, except that the rows in full
// 3-packet panels go to MultiplyFullPanelsAvx512 where the CPU has AVX-512
// (full_panels_avx512.h): the same bits (BlockedGemmTest checks them
// against Eigen's product).
#ifndef QUANTD_CORE_EXECUTOR_BLOCKED_GEMM_H_
#define QUANTD_CORE_EXECUTOR_BLOCKED_GEMM_H_

#include <cstdint>

namespace quantd::exec {

// How Eigen 3.4 evaluates a row-major C [M x N] (+)= op(A) [M x K] op(B):
// with its blocked GEMM or not (a coefficient-based product for K + M + N
// < 20, a matrix-vector one for M or N = 1, an empty depth), and that
// GEMM's blocking (gemm_blocking_space for a row-major destination): depth
// blocks of kc, blocks of mc over N (the rows of the column-major C^T it
// computes) and of nc over M.
struct EigenGemmPlan {
  bool blocked = false;
  int64_t kc = 0, mc = 0, nc = 0;
};
template <typename T>
EigenGemmPlan PlanEigenGemm(int64_t M, int64_t N, int64_t K);

// GemmBlock's product (gemm.h) where Eigen takes its blocked GEMM; false,
// doing nothing, where Eigen would not (a coefficient-based product for
// K + M + N < 20, a matrix-vector one for M or N = 1, an empty one).
template <typename T>
bool BlockedGemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                 T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
                 T* C, int64_t ldc, bool accumulate);

// C's rows [0, M) zeroed: Eigen's setZero before a blocked product that
// assigns rather than accumulates.
template <typename T>
void ZeroRows(T* C, int64_t M, int64_t N, int64_t ldc);

// One packed block's product, as gebp_kernel computes it: res (column-major,
// stride ldr) += alpha * A * B for `a` packed by gemm_pack_lhs ([rows x
// depth]) and `b` by gemm_pack_rhs ([depth x cols]), the rows in full
// panels on MultiplyFullPanelsAvx512 where the CPU has AVX-512 and the rest
// on gebp_kernel, which takes them as it would after those panels.
template <typename T>
void MultiplyPackedBlock(const T* a, const T* b, int64_t rows, int64_t depth,
                         int64_t cols, T alpha, T* res, int64_t ldr);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_BLOCKED_GEMM_H_
