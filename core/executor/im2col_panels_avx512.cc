#include "core/executor/im2col_panels_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/executor/full_panels_avx512.h"

namespace quantd::exec {
namespace {

constexpr int kLanes = 16;  // positions per register
// A tile: kVectors registers of positions times 8 output channels (two
// 4-column panels) in 24 accumulators. Per depth step it loads 3 image
// vectors and 8 weights for 24 multiply-adds; 16 positions times 24
// channels would load 25 values for 24.
constexpr int kVectors = 3;
constexpr int kPanels = 2;

using TapLoad = Im2ColPanels::TapLoad;
using Positions = Im2ColPanels::Positions;

// Masked-off lanes are never read, so an offset may point before the
// plane: it is applied as an integer.
__attribute__((target("avx512f"), always_inline)) inline const float* At(
    const float* plane, int32_t offset) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(plane) +
                                        static_cast<uintptr_t>(offset) *
                                            sizeof(float));
}

// V position registers times P 4-column panels (`b`) and S single columns
// (`singles`) of the packed block: one accumulator per output, started at
// 0, one multiply-add per depth step in order, then one multiply-add with
// 1 into res (Eigen's order for its full panels). `loads` holds each
// register's TapLoad per tap of a plane (khw of them), `k0` is the block's
// first im2col row.
template <int V, int P, int S>
__attribute__((target("avx512f"))) void Tile(
    const Im2ColSource& s, const TapLoad* loads, int64_t khw, int64_t k0,
    int64_t depth, const float* b, const float* singles, const Positions* v,
    float* res, int64_t ld) {
  constexpr int C = 4 * P + S;
  __m512 acc[V][C];
#pragma GCC unroll 3
  for (int r = 0; r < V; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const int64_t plane_size = s.H * s.W;
  const float* plane = s.x + k0 / khw * plane_size;
  int64_t t = k0 % khw;
  const TapLoad* tap[V];
#pragma GCC unroll 3
  for (int r = 0; r < V; ++r) tap[r] = loads + r * khw + t;
  for (int64_t k = 0; k < depth; ++k) {
    __m512 x[V];
#pragma GCC unroll 3
    for (int r = 0; r < V; ++r) {
      const TapLoad& l = *tap[r]++;
      x[r] = _mm512_maskz_loadu_ps(static_cast<__mmask16>(l.mask[0]),
                                   At(plane, l.offset[0]));
      if (l.mask[1] != 0) {
        x[r] = _mm512_mask_loadu_ps(x[r], static_cast<__mmask16>(l.mask[1]),
                                    At(plane, l.offset[1]));
      }
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m512 wc =
          _mm512_set1_ps(c < 4 * P ? b[(c / 4) * 4 * depth + k * 4 + c % 4]
                                   : singles[(c - 4 * P) * depth + k]);
#pragma GCC unroll 3
      for (int r = 0; r < V; ++r) {
        acc[r][c] = _mm512_fmadd_ps(x[r], wc, acc[r][c]);
      }
    }
    if (++t == khw) {
      t = 0;
      plane += plane_size;
#pragma GCC unroll 3
      for (int r = 0; r < V; ++r) tap[r] -= khw;
    }
  }
  const __m512 one = _mm512_set1_ps(1.0f);
#pragma GCC unroll 3
  for (int r = 0; r < V; ++r) {
    const auto lanes = static_cast<__mmask16>((1u << v[r].n) - 1);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      float* out = res + c * ld + v[r].i;
      _mm512_mask_storeu_ps(
          out, lanes,
          _mm512_fmadd_ps(acc[r][c], one, _mm512_maskz_loadu_ps(lanes, out)));
    }
  }
}

using TileFn = void (*)(const Im2ColSource&, const TapLoad*, int64_t, int64_t,
                        int64_t, const float*, const float*, const Positions*,
                        float*, int64_t);

// Tiles by [registers - 1][panels * 4 + singles], for up to 2 panels, or
// one panel and 3 single columns.
template <int V>
constexpr std::array<TileFn, 9> TilesOf() {
  return {{nullptr, &Tile<V, 0, 1>, &Tile<V, 0, 2>, &Tile<V, 0, 3>,
           &Tile<V, 1, 0>, &Tile<V, 1, 1>, &Tile<V, 1, 2>, &Tile<V, 1, 3>,
           &Tile<V, 2, 0>}};
}
constexpr std::array<std::array<TileFn, 9>, kVectors> kTiles = {
    {TilesOf<1>(), TilesOf<2>(), TilesOf<3>()}};

// Lanes [lo, hi) set.
uint16_t LaneRange(int64_t lo, int64_t hi) {
  if (hi <= lo) return 0;
  return static_cast<uint16_t>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

constexpr int64_t kMaxPlane = int64_t{1} << 30;

}  // namespace

bool Im2ColPanels::Takes(const Im2ColSource& s) {
  return UseFullPanelsAvx512() && s.SW == 1 && s.H * s.W < kMaxPlane;
}

int64_t Im2ColPanels::Rows(int64_t rows) {
  constexpr int64_t kThree = kFullPanelRows<float>, kTwo = kThree / 3 * 2;
  const int64_t three = rows / kThree * kThree;
  return rows - three >= kTwo ? three + kTwo : three;
}

// Registers of 16 consecutive positions, over at most two output rows
// (fewer where the range ends, or a row is shorter than 16), and per
// register and tap the runs it loads.
Im2ColPanels::Im2ColPanels(const Im2ColSource& s, int64_t i0, int64_t count)
    : s_(s), khw_(s.KH * s.KW) {
  for (int64_t i = i0; i < i0 + count;) {
    const int64_t p = s.p0 + i, oh = p / s.OW, ow = p % s.OW;
    const int64_t first = std::min<int64_t>(s.OW - ow, i0 + count - i);
    const int64_t n = std::min<int64_t>(
        {kLanes, i0 + count - i, first + std::min<int64_t>(s.OW, kLanes)});
    vectors_.push_back({i, static_cast<int>(n)});
    // Per tap: the run on row oh (lanes [0, a)) and on row oh + 1.
    const int64_t a = std::min<int64_t>(first, n);
    for (int64_t t = 0; t < khw_; ++t) {
      const int64_t dh = t / s.KW * s.DH - s.PH, dw = t % s.KW * s.DW - s.PW;
      TapLoad l{{0, 0}, {0, 0}};
      for (int run = 0; run < 2; ++run) {
        const int64_t lo = run == 0 ? 0 : a, hi = run == 0 ? a : n;
        if (hi <= lo) continue;
        const int64_t ih = (oh + run) * s.SH + dh;
        if (ih < 0 || ih >= s.H) continue;
        // Lane j of this run reads column iw0 + j.
        const int64_t iw0 = (run == 0 ? ow : -a) + dw;
        l.offset[run] = static_cast<int32_t>(ih * s.W + iw0);
        l.mask[run] = LaneRange(std::max(lo, -iw0), std::min(hi, s.W - iw0));
      }
      loads_.push_back(l);
    }
    i += n;
  }
}

void Im2ColPanels::Multiply(int64_t k2, int64_t depth, const float* b,
                            int64_t cols, float* res, int64_t ld) const {
  const int64_t panels = cols / 4;
  const float* singles = b + panels * 4 * depth;
  for (size_t r = 0; r < vectors_.size(); r += kVectors) {
    const size_t nv = std::min<size_t>(kVectors, vectors_.size() - r);
    const auto& tiles = kTiles[nv - 1];
    const TapLoad* l = &loads_[r * static_cast<size_t>(khw_)];
    int64_t q = 0;  // panels done
    for (; q + kPanels <= panels; q += kPanels) {
      tiles[4 * kPanels](s_, l, khw_, k2, depth, b + q * 4 * depth, nullptr,
                         &vectors_[r], res + q * 4 * ld, ld);
    }
    const int64_t rest = (panels - q) * 4 + cols % 4;
    if (rest > 0) {
      tiles[static_cast<size_t>(rest)](s_, l, khw_, k2, depth,
                                       b + q * 4 * depth, singles, &vectors_[r],
                                       res + q * 4 * ld, ld);
    }
  }
}

}  // namespace quantd::exec
