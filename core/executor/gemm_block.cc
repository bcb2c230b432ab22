#include <Eigen/Core>

#include "core/executor/blocked_gemm.h"
#include "core/executor/gemm.h"

namespace quantd::exec {

template <typename T>
void EigenGemmBlock(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
                    T* C, int64_t ldc, bool accumulate) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using CMap = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
  Eigen::Map<Mat, 0, Eigen::OuterStride<>> c(C, M, N,
                                             Eigen::OuterStride<>(ldc));
  if (K == 0) {
    if (!accumulate) c.setZero();
    return;
  }
  const CMap a(A, trans_a ? K : M, trans_a ? M : K, Eigen::OuterStride<>(lda));
  const CMap b(B, trans_b ? N : K, trans_b ? K : N, Eigen::OuterStride<>(ldb));
  auto run = [&](const auto& ea, const auto& eb) {
    if (accumulate) {
      if (alpha == T(1)) {
        c.noalias() += ea * eb;
      } else {
        c.noalias() += alpha * (ea * eb);
      }
    } else {
      if (alpha == T(1)) {
        c.noalias() = ea * eb;
      } else {
        c.noalias() = alpha * (ea * eb);
      }
    }
  };
  if (trans_a && trans_b) {
    run(a.transpose(), b.transpose());
  } else if (trans_a) {
    run(a.transpose(), b);
  } else if (trans_b) {
    run(a, b.transpose());
  } else {
    run(a, b);
  }
}

template <typename T>
void GemmBlock(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
               T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
               int64_t ldc, bool accumulate) {
  if (!BlockedGemm<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, C, ldc,
                      accumulate)) {
    EigenGemmBlock<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, C, ldc,
                      accumulate);
  }
}

#define QUANTD_GEMM_INSTANCES(NAME)                                          \
  template void NAME<float>(bool, bool, int64_t, int64_t, int64_t, float,    \
                            const float*, int64_t, const float*, int64_t,    \
                            float*, int64_t, bool);                          \
  template void NAME<double>(bool, bool, int64_t, int64_t, int64_t, double,  \
                             const double*, int64_t, const double*, int64_t, \
                             double*, int64_t, bool);
QUANTD_GEMM_INSTANCES(GemmBlock)
QUANTD_GEMM_INSTANCES(EigenGemmBlock)
#undef QUANTD_GEMM_INSTANCES

}  // namespace quantd::exec
