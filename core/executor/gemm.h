// Single-threaded GEMM on row-major blocks via Eigen (kernels parallelise by
// splitting output blocks with shape-only boundaries).
#ifndef QUANTD_CORE_EXECUTOR_GEMM_H_
#define QUANTD_CORE_EXECUTOR_GEMM_H_

#include <cstdint>

namespace quantd::exec {

// C[M,N] (leading dim ldc) = alpha * op(A) * op(B) + (accumulate ? C : 0),
// op(A) is [M,K]: A is stored [M,K] (lda) or [K,M] when trans_a.
// Defined in gemm_block.cc for float and double only: Eigen's product
// templates are compiled once, not in every kernel file that multiplies.
// The bits of Eigen's product, with its blocked GEMM's full panels on
// AVX-512 where the CPU has it (blocked_gemm.h).
template <typename T>
void GemmBlock(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
               T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
               int64_t ldc, bool accumulate);

// The same product through Eigen's own evaluation alone: the reference
// that tests compare the executor's products with.
template <typename T>
void EigenGemmBlock(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
                    T* C, int64_t ldc, bool accumulate);

extern template void GemmBlock<float>(bool, bool, int64_t, int64_t, int64_t,
                                      float, const float*, int64_t,
                                      const float*, int64_t, float*, int64_t,
                                      bool);
extern template void GemmBlock<double>(bool, bool, int64_t, int64_t, int64_t,
                                       double, const double*, int64_t,
                                       const double*, int64_t, double*, int64_t,
                                       bool);
extern template void EigenGemmBlock<float>(bool, bool, int64_t, int64_t,
                                           int64_t, float, const float*,
                                           int64_t, const float*, int64_t,
                                           float*, int64_t, bool);
extern template void EigenGemmBlock<double>(bool, bool, int64_t, int64_t,
                                            int64_t, double, const double*,
                                            int64_t, const double*, int64_t,
                                            double*, int64_t, bool);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_GEMM_H_
