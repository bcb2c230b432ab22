// The linear map inside every kernel layer: Y[r, m] = sum_j W[m, j] *
// P[r, g(m) * J + j] + b[m], with G groups, g(m) = m / (M / G). G = 1 is
// Gemm / MatMul (P the input rows, W [M, K]); a Conv is this on im2col
// patches (conv2d.h), depthwise when J = kernel area. Row-major buffers.
#ifndef QUANTD_CORE_TRAIN_GROUPED_LINEAR_H_
#define QUANTD_CORE_TRAIN_GROUPED_LINEAR_H_

#include <cstdint>
#include <vector>

#include "core/runtime/thread_pool.h"

namespace quantd::train {

struct LinearShape {
  int64_t rows = 0;    // R
  int64_t out = 0;     // M
  int64_t in = 0;      // J (per group)
  int64_t groups = 1;  // G; P has G * J columns
};

// y: [R, M]. bias may be empty. With a pool, groups (or, for one group,
// slices of rows) run in parallel: the same bits as without.
void GroupedLinearForward(const LinearShape& s, const std::vector<double>& p,
                          const std::vector<double>& w,
                          const std::vector<double>& bias,
                          std::vector<double>* y, ThreadPool* pool = nullptr);

// Gradients from dy [R, M]; each output may be null (not needed). dw and db
// are accumulated into (sized by the caller), dp is overwritten. With a
// pool, groups (or, for one group, slices of dw's outputs) run in parallel:
// the same bits as without.
void GroupedLinearBackward(const LinearShape& s, const std::vector<double>& p,
                           const std::vector<double>& w,
                           const std::vector<double>& dy,
                           std::vector<double>* dp, std::vector<double>* dw,
                           std::vector<double>* db, ThreadPool* pool = nullptr);

// The same on raw buffers: p [R, G * J], w [M, J], dy [R, M]; dp [R, G * J]
// is overwritten, dw [M, J] and db [M] accumulated into; each may be null.
// Same arithmetic, so the same bits, as the vector form.
void GroupedLinearBackward(const LinearShape& s, const double* p,
                           const double* w, const double* dy, double* dp,
                           double* dw, double* db, ThreadPool* pool = nullptr);

// Group g's part of it (no db): pg and dpg point at the group's first column
// of rows G * J apart (p + g * J in the full patches, or a buffer of that row
// stride holding only this group's columns: the products are the same).
void GroupedLinearBackwardGroup(const LinearShape& s, int64_t g,
                                const double* pg, const double* w,
                                const double* dy, double* dpg, double* dw);

// Raw forms for GPTQ's training step, without bias and input gradient: y
// [R, M] and dw [M, J] are overwritten. Split on `pool` as the vector forms,
// so the same bits on any thread count. A depthwise layer (one output per
// group) runs a direct kernel instead of a matrix-vector product per group:
// each output's sum over the group's J inputs (forward) or over the R rows
// (weight gradient) in index order.
void GroupedLinearForward(const LinearShape& s, const float* p, const float* w,
                          float* y, ThreadPool* pool = nullptr);
void GroupedLinearForward(const LinearShape& s, const double* p,
                          const double* w, double* y,
                          ThreadPool* pool = nullptr);
void GroupedLinearWeightGradient(const LinearShape& s, const float* p,
                                 const float* dy, float* dw,
                                 ThreadPool* pool = nullptr);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_GROUPED_LINEAR_H_
