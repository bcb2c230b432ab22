#include "core/executor/blocked_gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

#include "core/executor/full_panels_avx512.h"

static_assert(EIGEN_WORLD_VERSION == 3 && EIGEN_MAJOR_VERSION == 4,
              "blocked_gemm.cc follows Eigen 3.4's GEMM");

namespace quantd::exec {
namespace {

namespace ei = ::Eigen::internal;
using Index = Eigen::Index;

// general_matrix_matrix_product<..., ColMajor>::run's sequential path:
// res (column-major rows x cols, stride ldr) += alpha * lhs * rhs, lhs
// [rows x depth] and rhs [depth x cols] in the given storage orders.
template <typename T, int LhsOrder, int RhsOrder>
void ColMajorGemm(Index rows, Index cols, Index depth, const T* lhs_data,
                  Index lhs_stride, const T* rhs_data, Index rhs_stride,
                  T* res_data, Index ldr, T alpha, Index kc, Index mc,
                  Index nc) {
  using Traits = ei::gebp_traits<T, T>;
  static_assert(Traits::mr == kFullPanelRows<T> && Traits::nr == 4,
                "MultiplyFullPanelsAvx512 reads Eigen's AVX2 panels");
  using LhsMapper = ei::const_blas_data_mapper<T, Index, LhsOrder>;
  using RhsMapper = ei::const_blas_data_mapper<T, Index, RhsOrder>;
  using ResMapper =
      ei::blas_data_mapper<T, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  const LhsMapper lhs(lhs_data, lhs_stride);
  const RhsMapper rhs(rhs_data, rhs_stride);
  const ResMapper res(res_data, ldr, 1);
  ei::gemm_pack_lhs<T, Index, LhsMapper, Traits::mr, Traits::LhsProgress,
                    typename Traits::LhsPacket4Packing, LhsOrder>
      pack_lhs;
  ei::gemm_pack_rhs<T, Index, RhsMapper, Traits::nr, RhsOrder> pack_rhs;
  // Eigen's own buffers: on the stack up to EIGEN_STACK_ALLOCATION_LIMIT,
  // else on the heap, freed on return (a product's blocks are not kept).
  // The macro names Eigen's `internal` unqualified.
  namespace internal = ::Eigen::internal;
  ei_declare_aligned_stack_constructed_variable(T, block_a, kc * mc, 0);
  ei_declare_aligned_stack_constructed_variable(T, block_b, kc * nc, 0);
  for (Index i2 = 0; i2 < rows; i2 += mc) {
    const Index amc = std::min(i2 + mc, rows) - i2;
    for (Index k2 = 0; k2 < depth; k2 += kc) {
      const Index akc = std::min(k2 + kc, depth) - k2;
      pack_lhs(block_a, lhs.getSubMapper(i2, k2), akc, amc);
      for (Index j2 = 0; j2 < cols; j2 += nc) {
        const Index anc = std::min(j2 + nc, cols) - j2;
        pack_rhs(block_b, rhs.getSubMapper(k2, j2), akc, anc);
        MultiplyPackedBlock<T>(block_a, block_b, amc, akc, anc, alpha,
                               &res(i2, j2), ldr);
      }
    }
  }
}

}  // namespace

template <typename T>
EigenGemmPlan PlanEigenGemm(int64_t M, int64_t N, int64_t K) {
  EigenGemmPlan plan;
  // Eigen's dispatch (generic_product_impl<..., GemmProduct>): the
  // coefficient-based product below the threshold, GEMV for a vector.
  if (K + M + N < EIGEN_GEMM_TO_COEFFBASED_THRESHOLD || M < 2 || N < 2 ||
      K < 1) {
    return plan;
  }
  ei::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic,
                          Eigen::Dynamic>
      blocking(M, N, K, 1, true);
  plan.blocked = true;
  plan.kc = blocking.kc();
  plan.mc = std::min<int64_t>(N, blocking.mc());
  plan.nc = std::min<int64_t>(M, blocking.nc());
  return plan;
}

template <typename T>
void ZeroRows(T* C, int64_t M, int64_t N, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m) std::fill_n(C + m * ldc, N, T(0));
}

template <typename T>
bool BlockedGemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                 T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
                 T* C, int64_t ldc, bool accumulate) {
  const EigenGemmPlan plan = PlanEigenGemm<T>(M, N, K);
  if (!plan.blocked) return false;
  if (!accumulate) ZeroRows(C, M, N, ldc);
  const Index kc = plan.kc, mc = plan.mc, nc = plan.nc;
  // Row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T:
  // op(B)^T is B column-major [N x K] (or row-major when trans_b), op(A)^T
  // is A column-major [K x M] (or row-major when trans_a).
  constexpr int kCol = Eigen::ColMajor, kRow = Eigen::RowMajor;
  if (!trans_b && !trans_a) {
    ColMajorGemm<T, kCol, kCol>(N, M, K, B, ldb, A, lda, C, ldc, alpha, kc, mc,
                                nc);
  } else if (!trans_b) {
    ColMajorGemm<T, kCol, kRow>(N, M, K, B, ldb, A, lda, C, ldc, alpha, kc, mc,
                                nc);
  } else if (!trans_a) {
    ColMajorGemm<T, kRow, kCol>(N, M, K, B, ldb, A, lda, C, ldc, alpha, kc, mc,
                                nc);
  } else {
    ColMajorGemm<T, kRow, kRow>(N, M, K, B, ldb, A, lda, C, ldc, alpha, kc, mc,
                                nc);
  }
  return true;
}

template <typename T>
void MultiplyPackedBlock(const T* a, const T* b, int64_t rows, int64_t depth,
                         int64_t cols, T alpha, T* res, int64_t ldr) {
  using Traits = ei::gebp_traits<T, T>;
  using ResMapper =
      ei::blas_data_mapper<T, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  constexpr int64_t P = kFullPanelRows<T>;
  const int64_t full = UseFullPanelsAvx512() ? rows / P * P : 0;
  if (full > 0) {
    MultiplyFullPanelsAvx512<T>(a, b, full, depth, cols, alpha, res, ldr);
  }
  if (full < rows) {
    ei::gebp_kernel<T, T, Index, ResMapper, Traits::mr, Traits::nr, false,
                    false>
        gebp;
    gebp(ResMapper(res + full, ldr, 1), a + full * depth, b, rows - full, depth,
         cols, alpha);
  }
}

template EigenGemmPlan PlanEigenGemm<float>(int64_t, int64_t, int64_t);
template EigenGemmPlan PlanEigenGemm<double>(int64_t, int64_t, int64_t);
template void ZeroRows<float>(float*, int64_t, int64_t, int64_t);
template void ZeroRows<double>(double*, int64_t, int64_t, int64_t);

template void MultiplyPackedBlock<float>(const float*, const float*, int64_t,
                                         int64_t, int64_t, float, float*,
                                         int64_t);
template void MultiplyPackedBlock<double>(const double*, const double*, int64_t,
                                          int64_t, int64_t, double, double*,
                                          int64_t);

template bool BlockedGemm<float>(bool, bool, int64_t, int64_t, int64_t, float,
                                 const float*, int64_t, const float*, int64_t,
                                 float*, int64_t, bool);
template bool BlockedGemm<double>(bool, bool, int64_t, int64_t, int64_t, double,
                                  const double*, int64_t, const double*,
                                  int64_t, double*, int64_t, bool);

}  // namespace quantd::exec
