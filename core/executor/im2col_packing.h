// Packs a 2-D convolution's im2col columns for Eigen's GEMM micro kernel
// straight from the image. Eigen's GEMM sees X^T (column-major [width x
// depth]): row i is output position p0 + i, column k is im2col row (c, kh,
// kw). Pack stores what Eigen 3.4's gemm_pack_lhs<float, ..., 24, 8,
// Packet8f, ColMajor> stores for those values (panels of 24, then 16, 8 and
// 4 positions, then single ones; each panel k by k), so the micro kernel
// computes the bits it computes on Im2Col's buffer (PackedWeightsTest
// checks the products bit for bit).
#ifndef QUANTD_CORE_EXECUTOR_IM2COL_PACKING_H_
#define QUANTD_CORE_EXECUTOR_IM2COL_PACKING_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/executor/packed_gemm.h"

namespace quantd::exec {

class Im2ColPacker {
 public:
  Im2ColPacker(const Im2ColSource& s, int64_t width) : s_(s) {
    taps_.reserve(static_cast<size_t>(s.channels * s.KH * s.KW));
    for (int64_t c = 0; c < s.channels; ++c) {
      for (int64_t kh = 0; kh < s.KH; ++kh) {
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t dh = kh * s.DH - s.PH, dw = kw * s.DW - s.PW;
          taps_.push_back({c * s.H * s.W + dh * s.W + dw, dh, dw});
        }
      }
    }
    positions_.reserve(static_cast<size_t>(width));
    for (int64_t p = s.p0; p < s.p0 + width; ++p) {
      const int64_t oh = p / s.OW, ow = p % s.OW;
      positions_.push_back(
          {oh * s.SH * s.W + ow * s.SW, oh * s.SH, ow * s.SW, s.OW - ow});
    }
  }

  // Eigen's packed block of positions [i2, i2 + rows) and im2col rows
  // [k2, k2 + depth) into `a`.
  void Pack(float* a, int64_t i2, int64_t k2, int64_t depth,
            int64_t rows) const {
    int64_t i = 0;
    for (; i + 24 <= rows; i += 24) a = Panel<24>(a, i2 + i, k2, depth);
    for (; i + 16 <= rows; i += 16) a = Panel<16>(a, i2 + i, k2, depth);
    for (; i + 8 <= rows; i += 8) a = Panel<8>(a, i2 + i, k2, depth);
    for (; i + 4 <= rows; i += 4) a = Panel<4>(a, i2 + i, k2, depth);
    for (; i < rows; ++i) a = Panel<1>(a, i2 + i, k2, depth);
  }

 private:
  struct Tap {       // one im2col row
    int64_t offset;  // of its value at window origin 0: plane + dh*W + dw
    int64_t dh, dw;  // tap offsets less padding
  };
  struct Position {  // one output position
    int64_t offset;  // of its window origin: oh*SH*W + ow*SW
    int64_t ih, iw;  // that origin
    int64_t run;     // positions left in this output row, this one included
  };

  float At(const Position& p, const Tap& t) const {
    const int64_t ih = p.ih + t.dh, iw = p.iw + t.dw;
    if (ih < 0 || ih >= s_.H || iw < 0 || iw >= s_.W) return 0.0f;
    return s_.x[p.offset + t.offset];
  }

  // Positions p[0 .. len) of one output row at one im2col row: neighbours
  // in one image row (stride 1), clipped by the padding on either side.
  void CopyRun(float* d, const Position& p, const Tap& t, int64_t len) const {
    const int64_t ih = p.ih + t.dh;
    if (ih < 0 || ih >= s_.H) {
      std::fill_n(d, len, 0.0f);
      return;
    }
    const int64_t iw = p.iw + t.dw;
    const int64_t lo = std::clamp<int64_t>(-iw, 0, len);
    const int64_t hi = std::clamp<int64_t>(s_.W - iw, lo, len);
    std::fill_n(d, lo, 0.0f);
    // A loop, not memcpy: runs are at most 24 floats, and the call costs
    // more than the copy. An index, not a pointer: before lo, a pointer
    // would point outside the image.
    const int64_t base = p.offset + t.offset;
    for (int64_t j = lo; j < hi; ++j) d[j] = s_.x[base + j];
    std::fill_n(d + hi, len - hi, 0.0f);
  }

  // n positions from i, for im2col rows k2 .. k2 + depth - 1: n floats per
  // row. In a stride-1 layer the positions of one output row read
  // neighbours of one image row: copies, one per output row the n span.
  template <int n>
  float* Panel(float* a, int64_t i, int64_t k2, int64_t depth) const {
    const Position* p = &positions_[static_cast<size_t>(i)];
    const Tap* t = &taps_[static_cast<size_t>(k2)];
    if (s_.SW != 1) {
      for (int64_t k = 0; k < depth; ++k, a += n) {
        for (int j = 0; j < n; ++j) a[j] = At(p[j], t[k]);
      }
      return a;
    }
    if (p->run >= n) {
      for (int64_t k = 0; k < depth; ++k, a += n) {
        const int64_t ih = p->ih + t[k].dh, iw = p->iw + t[k].dw;
        if (ih >= 0 && ih < s_.H && iw >= 0 && iw + n <= s_.W) {
          std::memcpy(a, s_.x + p->offset + t[k].offset, n * sizeof(float));
        } else {
          CopyRun(a, *p, t[k], n);
        }
      }
      return a;
    }
    for (int64_t k = 0; k < depth; ++k, a += n) {
      for (int64_t j = 0; j < n;) {
        const int64_t len = std::min<int64_t>(p[j].run, n - j);
        CopyRun(a + j, p[j], t[k], len);
        j += len;
      }
    }
    return a;
  }

  Im2ColSource s_;
  std::vector<Tap> taps_;
  std::vector<Position> positions_;
};

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_IM2COL_PACKING_H_
