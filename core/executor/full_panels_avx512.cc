#include "core/executor/full_panels_avx512.h"

#include <immintrin.h>

#include <atomic>

namespace quantd::exec {
namespace {

const bool kHaveAvx512 = __builtin_cpu_supports("avx512f");
std::atomic<bool> enabled{true};

constexpr int64_t kP = kFullPanelRows;

// The row vectors of depth step k: 48 rows of two panels p0, p1 (x0 =
// p0[0, 16), x1 = p0[16, 24) with p1[0, 8), x2 = p1[8, 24)) or, with
// `one_panel`, 24 rows of p0 (x1 = p0[16, 24) in the low lanes, x2 unused).
#define QUANTD_LOAD_ROWS(k)                                            \
  const float* a0 = p0 + (k)*kP;                                       \
  const __m512 x0 = _mm512_loadu_ps(a0);                               \
  __m512 x1 = _mm512_maskz_loadu_ps(0x00FF, a0 + 16);                  \
  __m512 x2 = x0;                                                      \
  if (!one_panel) {                                                    \
    const float* a1 = p1 + (k)*kP;                                     \
    /* Lanes 8-15 from a1[0, 8): the masked-off lanes are not read. */ \
    x1 = _mm512_mask_loadu_ps(x1, 0xFF00, a1 - 8);                     \
    x2 = _mm512_loadu_ps(a1 + 8);                                      \
  }

// res[0, 48) (or [0, 24)) += c0, c1, c2.
__attribute__((target("avx512f"))) inline void AddRows(float* r, bool one_panel,
                                                       __m512 c0, __m512 c1,
                                                       __m512 c2) {
  _mm512_storeu_ps(r, _mm512_add_ps(_mm512_loadu_ps(r), c0));
  if (one_panel) {
    _mm512_mask_storeu_ps(
        r + 16, 0x00FF,
        _mm512_add_ps(_mm512_maskz_loadu_ps(0x00FF, r + 16), c1));
    return;
  }
  _mm512_storeu_ps(r + 16, _mm512_add_ps(_mm512_loadu_ps(r + 16), c1));
  _mm512_storeu_ps(r + 32, _mm512_add_ps(_mm512_loadu_ps(r + 32), c2));
}

// Rows times one 4-column panel (depth step k reads b[4k, 4k + 4)). Each
// output: 0, then one fma per depth step in order, then one addition to res
// (Eigen's acc(): fma(c, 1, r) rounds as r + c). Named accumulators: GCC
// keeps an array of them in memory.
template <bool one_panel>
__attribute__((target("avx512f"))) void TileOf4(const float* p0,
                                                const float* p1, const float* b,
                                                int64_t depth, float* res,
                                                int64_t ld) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00,
         c12 = c00, c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00,
         c32 = c00;
  for (int64_t k = 0; k < depth; ++k) {
    QUANTD_LOAD_ROWS(k)
    const float* bk = b + 4 * k;
    __m512 w = _mm512_set1_ps(bk[0]);
    c00 = _mm512_fmadd_ps(x0, w, c00);
    c01 = _mm512_fmadd_ps(x1, w, c01);
    if (!one_panel) c02 = _mm512_fmadd_ps(x2, w, c02);
    w = _mm512_set1_ps(bk[1]);
    c10 = _mm512_fmadd_ps(x0, w, c10);
    c11 = _mm512_fmadd_ps(x1, w, c11);
    if (!one_panel) c12 = _mm512_fmadd_ps(x2, w, c12);
    w = _mm512_set1_ps(bk[2]);
    c20 = _mm512_fmadd_ps(x0, w, c20);
    c21 = _mm512_fmadd_ps(x1, w, c21);
    if (!one_panel) c22 = _mm512_fmadd_ps(x2, w, c22);
    w = _mm512_set1_ps(bk[3]);
    c30 = _mm512_fmadd_ps(x0, w, c30);
    c31 = _mm512_fmadd_ps(x1, w, c31);
    if (!one_panel) c32 = _mm512_fmadd_ps(x2, w, c32);
  }
  AddRows(res, one_panel, c00, c01, c02);
  AddRows(res + ld, one_panel, c10, c11, c12);
  AddRows(res + 2 * ld, one_panel, c20, c21, c22);
  AddRows(res + 3 * ld, one_panel, c30, c31, c32);
}

// Rows times one single column (depth step k reads b[k]).
template <bool one_panel>
__attribute__((target("avx512f"))) void TileOf1(const float* p0,
                                                const float* p1, const float* b,
                                                int64_t depth, float* res) {
  __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0;
  for (int64_t k = 0; k < depth; ++k) {
    QUANTD_LOAD_ROWS(k)
    const __m512 w = _mm512_set1_ps(b[k]);
    c0 = _mm512_fmadd_ps(x0, w, c0);
    c1 = _mm512_fmadd_ps(x1, w, c1);
    if (!one_panel) c2 = _mm512_fmadd_ps(x2, w, c2);
  }
  AddRows(res, one_panel, c0, c1, c2);
}

#undef QUANTD_LOAD_ROWS

template <bool one_panel>
__attribute__((target("avx512f"))) void Columns(const float* p0,
                                                const float* p1, const float* b,
                                                int64_t depth, int64_t cols,
                                                float* res, int64_t ld) {
  const int64_t cols4 = cols / 4 * 4;
  for (int64_t j = 0; j < cols4; j += 4) {
    TileOf4<one_panel>(p0, p1, b + j * depth, depth, res + j * ld, ld);
  }
  for (int64_t j = cols4; j < cols; ++j) {
    TileOf1<one_panel>(p0, p1, b + j * depth, depth, res + j * ld);
  }
}

}  // namespace

bool UseFullPanelsAvx512() {
  return kHaveAvx512 && enabled.load(std::memory_order_relaxed);
}

void SetFullPanelsAvx512Enabled(bool on) {
  enabled.store(on, std::memory_order_relaxed);
}

void MultiplyFullPanelsAvx512(const float* a, const float* b, int64_t rows,
                              int64_t depth, int64_t cols, float* res,
                              int64_t ld) {
  const int64_t panels = rows / kP;
  const int64_t panel_floats = kP * depth;
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2) {
    const float* p0 = a + p * panel_floats;
    Columns<false>(p0, p0 + panel_floats, b, depth, cols, res + p * kP, ld);
  }
  if (p < panels) {
    const float* p0 = a + p * panel_floats;
    Columns<true>(p0, p0, b, depth, cols, res + p * kP, ld);
  }
}

}  // namespace quantd::exec
