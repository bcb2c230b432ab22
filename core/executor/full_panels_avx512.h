// Eigen 3.4's GEMM micro-kernel arithmetic for its full-width row panels,
// on AVX-512.
//
// The executor's products are Eigen's AVX2 GEMM (packed_gemm.h,
// blocked_gemm.h): each output's bits follow the order of its additions.
// In a depth block, an output whose row falls in one of the micro-kernel's
// 3-packet panels (24 float or 12 double rows) gets one accumulator
// started at 0, one fused multiply-add per depth step in order, then one
// fused multiply-add of it with alpha into the destination (so does its
// 2-packet panel, which im2col_panels_avx512.h takes; the 1-packet panel
// and narrower rows take other orders). That order does not
// depend on the vector width, so 512-bit registers over two panels at once
// give the same bits at up to twice the multiply-adds per cycle, where the
// CPU has AVX-512. The leftover rows stay with Eigen.
#ifndef QUANTD_CORE_EXECUTOR_FULL_PANELS_AVX512_H_
#define QUANTD_CORE_EXECUTOR_FULL_PANELS_AVX512_H_

#include <cstdint>

namespace quantd::exec {

// Rows per panel in Eigen's AVX2 packing of the left-hand side (3 packets).
template <typename T>
inline constexpr int64_t kFullPanelRows = 3 * (32 /
                                               static_cast<int64_t>(sizeof(T)));

// True where the CPU has AVX-512F and the kernel is enabled (the default).
bool UseFullPanelsAvx512();

// Turns the kernel off (false) or back on where the CPU has it: tests
// compare both paths bit for bit, benchmarks time them.
void SetFullPanelsAvx512Enabled(bool enabled);

// res[j * ld + i] += alpha * (sum over k in order of a(i, k) * b(k, j)), for
// rows i in [0, rows) (a multiple of kFullPanelRows<T>) and columns j in
// [0, cols), with one accumulator per output as described above. `a` is
// gemm_pack_lhs's layout for those rows (panels, each depth-major), `b`
// gemm_pack_rhs's for nr = 4 (4-column panels, then single columns, each
// `depth` steps long). Needs UseFullPanelsAvx512(). For float and double.
template <typename T>
void MultiplyFullPanelsAvx512(const T* a, const T* b, int64_t rows,
                              int64_t depth, int64_t cols, T alpha, T* res,
                              int64_t ld);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_FULL_PANELS_AVX512_H_
