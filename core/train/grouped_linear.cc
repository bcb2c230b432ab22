#include "core/train/grouped_linear.h"

#include <algorithm>
#include <utility>

#include "core/executor/gemm.h"

namespace quantd::train {
namespace {

// Ungrouped products split on a pool into slices of this many rows (the
// forward) or outputs (the weight gradient): the dimension Eigen walks in
// register blocks of nr = 4 columns, sliced at multiples of 4, so every
// output still takes the same kernel path and sums its terms in the same
// order (Eigen's depth blocking depends on the depth alone). Slices this
// large never fall to Eigen's coefficient-based or matrix-vector products.
constexpr int64_t kSliceWidth = 64;

// Slices of a split dimension of `n` (the last takes the remainder), or 1
// when there is no pool to split for, the dimension is too short, or the
// other side of the product has fewer than 2 columns (a matrix-vector
// product, which is not split).
int64_t Slices(ThreadPool* pool, int64_t n, int64_t other) {
  if (pool == nullptr || pool->num_threads() == 0 || other < 2) return 1;
  return std::max<int64_t>(1, n / kSliceWidth);
}

// [begin, end) of slice c of `slices` over n.
std::pair<int64_t, int64_t> Slice(int64_t c, int64_t slices, int64_t n) {
  return {c * kSliceWidth, c + 1 == slices ? n : (c + 1) * kSliceWidth};
}

// Runs part(g, begin, end) over a product: grouped, each group whole
// ([0, n)) on the pool; ungrouped, the `n` split rows in Slices(pool, n,
// other) slices, each on one thread.
template <typename Part>
void ForGroupsOrSlices(const LinearShape& s, int64_t n, int64_t other,
                       ThreadPool* pool, const Part& part) {
  if (s.groups > 1) {
    ParallelForChunks(pool, s.groups, 1, [&](int64_t b, int64_t e) {
      for (int64_t g = b; g < e; ++g) part(g, 0, n);
    });
    return;
  }
  const int64_t slices = Slices(pool, n, other);
  ParallelForChunks(pool, slices, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const auto [b0, b1] = Slice(c, slices, n);
      part(0, b0, b1);
    }
  });
}

}  // namespace

void GroupedLinearForward(const LinearShape& s, const std::vector<double>& p,
                          const std::vector<double>& w,
                          const std::vector<double>& bias,
                          std::vector<double>* y, ThreadPool* pool) {
  const int64_t mg = s.out / s.groups;
  y->assign(s.rows * s.out, 0.0);
  // Rows [r0, r1) of group g, bias included.
  const auto rows = [&](int64_t g, int64_t r0, int64_t r1) {
    // y_g = P_g W_g^T.
    exec::GemmBlock<double>(false, true, r1 - r0, mg, s.in, 1.0,
                            p.data() + r0 * s.groups * s.in + g * s.in,
                            s.groups * s.in, w.data() + g * mg * s.in, s.in,
                            y->data() + r0 * s.out + g * mg, s.out, false);
  };
  const auto add_bias = [&](int64_t r0, int64_t r1) {
    if (bias.empty()) return;
    for (int64_t r = r0; r < r1; ++r) {
      double* row = y->data() + r * s.out;
      for (int64_t m = 0; m < s.out; ++m) row[m] += bias[m];
    }
  };
  // Ungrouped, each slice adds its bias; grouped, once every group is done.
  ForGroupsOrSlices(s, s.rows, s.out, pool,
                    [&](int64_t g, int64_t r0, int64_t r1) {
                      rows(g, r0, r1);
                      if (s.groups == 1) add_bias(r0, r1);
                    });
  if (s.groups > 1) add_bias(0, s.rows);
}

void GroupedLinearBackward(const LinearShape& s, const std::vector<double>& p,
                           const std::vector<double>& w,
                           const std::vector<double>& dy,
                           std::vector<double>* dp, std::vector<double>* dw,
                           std::vector<double>* db, ThreadPool* pool) {
  if (dp != nullptr) dp->assign(s.rows * s.groups * s.in, 0.0);
  GroupedLinearBackward(s, p.data(), w.data(), dy.data(),
                        dp != nullptr ? dp->data() : nullptr,
                        dw != nullptr ? dw->data() : nullptr,
                        db != nullptr ? db->data() : nullptr, pool);
}

void GroupedLinearBackward(const LinearShape& s, const double* p,
                           const double* w, const double* dy, double* dp,
                           double* dw, double* db, ThreadPool* pool) {
  const int64_t slices =
      s.groups == 1 && dw != nullptr ? Slices(pool, s.out, s.in) : 1;
  if (s.groups > 1) {
    ParallelForChunks(pool, s.groups, 1, [&](int64_t b, int64_t e) {
      for (int64_t g = b; g < e; ++g) {
        GroupedLinearBackwardGroup(s, g, p + g * s.in, w, dy,
                                   dp != nullptr ? dp + g * s.in : nullptr, dw);
      }
    });
  } else if (slices > 1) {
    // Outputs [m0, m1) of dW += dY^T P.
    ParallelForChunks(pool, slices, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const auto [m0, m1] = Slice(c, slices, s.out);
        exec::GemmBlock<double>(true, false, m1 - m0, s.in, s.rows, 1.0,
                                dy + m0, s.out, p, s.in, dw + m0 * s.in, s.in,
                                true);
      }
    });
    if (dp != nullptr) GroupedLinearBackwardGroup(s, 0, p, w, dy, dp, nullptr);
  } else {
    GroupedLinearBackwardGroup(s, 0, p, w, dy, dp, dw);
  }
  if (db != nullptr) {
    // Each output's sum over the rows in row order, outputs in slices.
    ParallelForChunks(pool, s.out, 256, [&](int64_t m0, int64_t m1) {
      for (int64_t r = 0; r < s.rows; ++r) {
        const double* row = dy + r * s.out;
        for (int64_t m = m0; m < m1; ++m) db[m] += row[m];
      }
    });
  }
}

void GroupedLinearBackwardGroup(const LinearShape& s, int64_t g,
                                const double* pg, const double* w,
                                const double* dy, double* dpg, double* dw) {
  const int64_t mg = s.out / s.groups;
  // dW_g += dY_g^T P_g; dP_g = dY_g W_g.
  if (dw != nullptr) {
    exec::GemmBlock<double>(true, false, mg, s.in, s.rows, 1.0, dy + g * mg,
                            s.out, pg, s.groups * s.in, dw + g * mg * s.in,
                            s.in, true);
  }
  if (dpg != nullptr) {
    exec::GemmBlock<double>(false, false, s.rows, s.in, mg, 1.0, dy + g * mg,
                            s.out, w + g * mg * s.in, s.in, dpg,
                            s.groups * s.in, false);
  }
}

namespace {

// Groups per task of the depthwise kernels.
constexpr int64_t kDepthwiseGroupsPerChunk = 32;

bool IsDepthwise(const LinearShape& s) {
  return s.groups > 1 && s.out == s.groups;
}

// Depthwise forward, groups [g0, g1): each output's sum over j in order,
// four rows at a time (four independent sums in flight).
template <typename T>
void DepthwiseRows(const LinearShape& s, const T* p, const T* w, T* y,
                   int64_t g0, int64_t g1) {
  const int64_t cols = s.groups * s.in;
  int64_t r = 0;
  for (; r + 4 <= s.rows; r += 4) {
    const T* p0 = p + r * cols;
    const T* p1 = p0 + cols;
    const T* p2 = p1 + cols;
    const T* p3 = p2 + cols;
    T* y0 = y + r * s.out;
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t o = g * s.in;
      const T* wg = w + o;
      T a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      for (int64_t j = 0; j < s.in; ++j) {
        a0 += p0[o + j] * wg[j];
        a1 += p1[o + j] * wg[j];
        a2 += p2[o + j] * wg[j];
        a3 += p3[o + j] * wg[j];
      }
      y0[g] = a0;
      y0[s.out + g] = a1;
      y0[2 * s.out + g] = a2;
      y0[3 * s.out + g] = a3;
    }
  }
  for (; r < s.rows; ++r) {
    const T* pr = p + r * cols;
    T* yr = y + r * s.out;
    for (int64_t g = g0; g < g1; ++g) {
      const T* pg = pr + g * s.in;
      const T* wg = w + g * s.in;
      T acc = 0;
      for (int64_t j = 0; j < s.in; ++j) acc += pg[j] * wg[j];
      yr[g] = acc;
    }
  }
}

// The raw forms of GroupedLinearForward.

template <typename T>
void RawForward(const LinearShape& s, const T* p, const T* w, T* y,
                ThreadPool* pool) {
  const int64_t mg = s.out / s.groups, cols = s.groups * s.in;
  if (IsDepthwise(s)) {
    ParallelForChunks(
        pool, s.groups, kDepthwiseGroupsPerChunk,
        [&](int64_t g0, int64_t g1) { DepthwiseRows(s, p, w, y, g0, g1); });
    return;
  }
  const auto rows = [&](int64_t g, int64_t r0, int64_t r1) {
    exec::GemmBlock<T>(false, true, r1 - r0, mg, s.in, T(1),
                       p + r0 * cols + g * s.in, cols, w + g * mg * s.in, s.in,
                       y + r0 * s.out + g * mg, s.out, false);
  };
  ForGroupsOrSlices(s, s.rows, s.out, pool, rows);
}

}  // namespace

void GroupedLinearForward(const LinearShape& s, const float* p, const float* w,
                          float* y, ThreadPool* pool) {
  RawForward(s, p, w, y, pool);
}

void GroupedLinearForward(const LinearShape& s, const double* p,
                          const double* w, double* y, ThreadPool* pool) {
  RawForward(s, p, w, y, pool);
}

void GroupedLinearWeightGradient(const LinearShape& s, const float* p,
                                 const float* dy, float* dw, ThreadPool* pool) {
  const int64_t mg = s.out / s.groups, cols = s.groups * s.in;
  if (IsDepthwise(s)) {
    ParallelForChunks(pool, s.groups, kDepthwiseGroupsPerChunk,
                      [&](int64_t g0, int64_t g1) {
                        std::fill(dw + g0 * s.in, dw + g1 * s.in, 0.0f);
                        for (int64_t r = 0; r < s.rows; ++r) {
                          const float* pr = p + r * cols;
                          const float* dyr = dy + r * s.out;
                          for (int64_t g = g0; g < g1; ++g) {
                            const float d = dyr[g];
                            const float* pg = pr + g * s.in;
                            float* dwg = dw + g * s.in;
                            for (int64_t j = 0; j < s.in; ++j)
                              dwg[j] += d * pg[j];
                          }
                        }
                      });
    return;
  }
  // Outputs [m0, m1) of group g: dW = dY^T P.
  const auto outputs = [&](int64_t g, int64_t m0, int64_t m1) {
    exec::GemmBlock<float>(true, false, m1 - m0, s.in, s.rows, 1.0f,
                           dy + g * mg + m0, s.out, p + g * s.in, cols,
                           dw + (g * mg + m0) * s.in, s.in, false);
  };
  // Ungrouped, mg is every output.
  ForGroupsOrSlices(s, mg, s.in, pool, outputs);
}

}  // namespace quantd::train
