#include "core/executor/full_panels_avx512.h"

#include <immintrin.h>

#include <atomic>

namespace quantd::exec {
namespace {

const bool kHaveAvx512 = __builtin_cpu_supports("avx512f");
std::atomic<bool> enabled{true};

#define QUANTD_AVX512 __attribute__((target("avx512f"), always_inline)) inline

// One 512-bit register of T: kLanes values; a panel is 1.5 registers.
template <typename T>
struct Simd;

template <>
struct Simd<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr Mask kLow = 0x00FF, kHigh = 0xFF00;
  QUANTD_AVX512 static V Zero() { return _mm512_setzero_ps(); }
  QUANTD_AVX512 static V Set1(float v) { return _mm512_set1_ps(v); }
  QUANTD_AVX512 static V Load(const float* p) { return _mm512_loadu_ps(p); }
  QUANTD_AVX512 static V LoadZ(Mask m, const float* p) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  QUANTD_AVX512 static V LoadInto(V v, Mask m, const float* p) {
    return _mm512_mask_loadu_ps(v, m, p);
  }
  QUANTD_AVX512 static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  QUANTD_AVX512 static void StoreM(float* p, Mask m, V v) {
    _mm512_mask_storeu_ps(p, m, v);
  }
  QUANTD_AVX512 static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};

template <>
struct Simd<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr Mask kLow = 0x0F, kHigh = 0xF0;
  QUANTD_AVX512 static V Zero() { return _mm512_setzero_pd(); }
  QUANTD_AVX512 static V Set1(double v) { return _mm512_set1_pd(v); }
  QUANTD_AVX512 static V Load(const double* p) { return _mm512_loadu_pd(p); }
  QUANTD_AVX512 static V LoadZ(Mask m, const double* p) {
    return _mm512_maskz_loadu_pd(m, p);
  }
  QUANTD_AVX512 static V LoadInto(V v, Mask m, const double* p) {
    return _mm512_mask_loadu_pd(v, m, p);
  }
  QUANTD_AVX512 static void Store(double* p, V v) { _mm512_storeu_pd(p, v); }
  QUANTD_AVX512 static void StoreM(double* p, Mask m, V v) {
    _mm512_mask_storeu_pd(p, m, v);
  }
  QUANTD_AVX512 static V Fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
};

// The row vectors of depth step k: two panels p0, p1 of P = 1.5 registers
// each (x0 = p0[0, L), x1 = p0[L, P) with p1[0, L/2), x2 = p1[L/2, P)) or,
// with one_panel, p0 alone (x1 = p0[L, P) in the low lanes, x2 unused).
template <typename T, bool one_panel>
QUANTD_AVX512 void LoadRows(const T* p0, const T* p1, int64_t k,
                            typename Simd<T>::V& x0, typename Simd<T>::V& x1,
                            typename Simd<T>::V& x2) {
  using S = Simd<T>;
  constexpr int64_t P = kFullPanelRows<T>, L = S::kLanes;
  const T* a0 = p0 + k * P;
  x0 = S::Load(a0);
  x1 = S::LoadZ(S::kLow, a0 + L);
  if (!one_panel) {
    const T* a1 = p1 + k * P;
    // The high lanes from a1[0, L/2): the masked-off lanes are not read.
    x1 = S::LoadInto(x1, S::kHigh, a1 - L / 2);
    x2 = S::Load(a1 + L / 2);
  }
}

// res[0, 2P) (or [0, P)) = fma(c, alpha, res): Eigen's acc().
template <typename T, bool one_panel>
QUANTD_AVX512 void AddRows(T* r, typename Simd<T>::V alpha,
                           typename Simd<T>::V c0, typename Simd<T>::V c1,
                           typename Simd<T>::V c2) {
  using S = Simd<T>;
  constexpr int L = S::kLanes;
  S::Store(r, S::Fma(c0, alpha, S::Load(r)));
  if (one_panel) {
    S::StoreM(r + L, S::kLow, S::Fma(c1, alpha, S::LoadZ(S::kLow, r + L)));
    return;
  }
  S::Store(r + L, S::Fma(c1, alpha, S::Load(r + L)));
  S::Store(r + 2 * L, S::Fma(c2, alpha, S::Load(r + 2 * L)));
}

// The rows times one 4-column panel (depth step k reads b[4k, 4k + 4)).
// Each output: 0, then one fma per depth step in order, then AddRows.
// Named accumulators: GCC keeps an array of them in memory.
template <typename T, bool one_panel>
__attribute__((target("avx512f"))) void TileOf4(const T* p0, const T* p1,
                                                const T* b, int64_t depth,
                                                T alpha, T* res, int64_t ld) {
  using S = Simd<T>;
  using V = typename S::V;
  V c00 = S::Zero(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00,
    c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
  V x0, x1, x2 = c00;
  for (int64_t k = 0; k < depth; ++k) {
    LoadRows<T, one_panel>(p0, p1, k, x0, x1, x2);
    const T* bk = b + 4 * k;
    V w = S::Set1(bk[0]);
    c00 = S::Fma(x0, w, c00);
    c01 = S::Fma(x1, w, c01);
    if (!one_panel) c02 = S::Fma(x2, w, c02);
    w = S::Set1(bk[1]);
    c10 = S::Fma(x0, w, c10);
    c11 = S::Fma(x1, w, c11);
    if (!one_panel) c12 = S::Fma(x2, w, c12);
    w = S::Set1(bk[2]);
    c20 = S::Fma(x0, w, c20);
    c21 = S::Fma(x1, w, c21);
    if (!one_panel) c22 = S::Fma(x2, w, c22);
    w = S::Set1(bk[3]);
    c30 = S::Fma(x0, w, c30);
    c31 = S::Fma(x1, w, c31);
    if (!one_panel) c32 = S::Fma(x2, w, c32);
  }
  const V a = S::Set1(alpha);
  AddRows<T, one_panel>(res, a, c00, c01, c02);
  AddRows<T, one_panel>(res + ld, a, c10, c11, c12);
  AddRows<T, one_panel>(res + 2 * ld, a, c20, c21, c22);
  AddRows<T, one_panel>(res + 3 * ld, a, c30, c31, c32);
}

// The rows times one single column (depth step k reads b[k]).
template <typename T, bool one_panel>
__attribute__((target("avx512f"))) void TileOf1(const T* p0, const T* p1,
                                                const T* b, int64_t depth,
                                                T alpha, T* res) {
  using S = Simd<T>;
  using V = typename S::V;
  V c0 = S::Zero(), c1 = c0, c2 = c0;
  V x0, x1, x2 = c0;
  for (int64_t k = 0; k < depth; ++k) {
    LoadRows<T, one_panel>(p0, p1, k, x0, x1, x2);
    const V w = S::Set1(b[k]);
    c0 = S::Fma(x0, w, c0);
    c1 = S::Fma(x1, w, c1);
    if (!one_panel) c2 = S::Fma(x2, w, c2);
  }
  AddRows<T, one_panel>(res, S::Set1(alpha), c0, c1, c2);
}

template <typename T, bool one_panel>
__attribute__((target("avx512f"))) void Columns(const T* p0, const T* p1,
                                                const T* b, int64_t depth,
                                                int64_t cols, T alpha, T* res,
                                                int64_t ld) {
  const int64_t cols4 = cols / 4 * 4;
  for (int64_t j = 0; j < cols4; j += 4) {
    TileOf4<T, one_panel>(p0, p1, b + j * depth, depth, alpha, res + j * ld,
                          ld);
  }
  for (int64_t j = cols4; j < cols; ++j) {
    TileOf1<T, one_panel>(p0, p1, b + j * depth, depth, alpha, res + j * ld);
  }
}

#undef QUANTD_AVX512

}  // namespace

bool UseFullPanelsAvx512() {
  return kHaveAvx512 && enabled.load(std::memory_order_relaxed);
}

void SetFullPanelsAvx512Enabled(bool on) {
  enabled.store(on, std::memory_order_relaxed);
}

template <typename T>
void MultiplyFullPanelsAvx512(const T* a, const T* b, int64_t rows,
                              int64_t depth, int64_t cols, T alpha, T* res,
                              int64_t ld) {
  constexpr int64_t P = kFullPanelRows<T>;
  const int64_t panels = rows / P;
  const int64_t panel_size = P * depth;
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2) {
    const T* p0 = a + p * panel_size;
    Columns<T, false>(p0, p0 + panel_size, b, depth, cols, alpha, res + p * P,
                      ld);
  }
  if (p < panels) {
    const T* p0 = a + p * panel_size;
    Columns<T, true>(p0, p0, b, depth, cols, alpha, res + p * P, ld);
  }
}

template void MultiplyFullPanelsAvx512<float>(const float*, const float*,
                                              int64_t, int64_t, int64_t, float,
                                              float*, int64_t);
template void MultiplyFullPanelsAvx512<double>(const double*, const double*,
                                               int64_t, int64_t, int64_t,
                                               double, double*, int64_t);

}  // namespace quantd::exec
