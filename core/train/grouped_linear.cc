#include "core/train/grouped_linear.h"

#include <Eigen/Core>

namespace quantd::train {
namespace {

using RowMajor =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using ConstBlock = Eigen::Map<const RowMajor, 0, Stride>;
using Block = Eigen::Map<RowMajor, 0, Stride>;

}  // namespace

void GroupedLinearForward(const LinearShape& s, const std::vector<double>& p,
                          const std::vector<double>& w,
                          const std::vector<double>& bias,
                          std::vector<double>* y) {
  const int64_t mg = s.out / s.groups;
  y->assign(s.rows * s.out, 0.0);
  for (int64_t g = 0; g < s.groups; ++g) {
    ConstBlock pg(p.data() + g * s.in, s.rows, s.in, Stride(s.groups * s.in));
    ConstBlock wg(w.data() + g * mg * s.in, mg, s.in, Stride(s.in));
    Block yg(y->data() + g * mg, s.rows, mg, Stride(s.out));
    yg.noalias() = pg * wg.transpose();
  }
  if (!bias.empty()) {
    for (int64_t r = 0; r < s.rows; ++r) {
      double* row = y->data() + r * s.out;
      for (int64_t m = 0; m < s.out; ++m) row[m] += bias[m];
    }
  }
}

void GroupedLinearBackward(const LinearShape& s, const std::vector<double>& p,
                           const std::vector<double>& w,
                           const std::vector<double>& dy,
                           std::vector<double>* dp, std::vector<double>* dw,
                           std::vector<double>* db) {
  if (dp != nullptr) dp->assign(s.rows * s.groups * s.in, 0.0);
  GroupedLinearBackward(s, p.data(), w.data(), dy.data(),
                        dp != nullptr ? dp->data() : nullptr,
                        dw != nullptr ? dw->data() : nullptr,
                        db != nullptr ? db->data() : nullptr);
}

void GroupedLinearBackward(const LinearShape& s, const double* p,
                           const double* w, const double* dy, double* dp,
                           double* dw, double* db) {
  for (int64_t g = 0; g < s.groups; ++g) {
    GroupedLinearBackwardGroup(s, g, p + g * s.in, w, dy,
                               dp != nullptr ? dp + g * s.in : nullptr, dw);
  }
  if (db != nullptr) {
    for (int64_t r = 0; r < s.rows; ++r) {
      const double* row = dy + r * s.out;
      for (int64_t m = 0; m < s.out; ++m) db[m] += row[m];
    }
  }
}

void GroupedLinearBackwardGroup(const LinearShape& s, int64_t g,
                                const double* pg, const double* w,
                                const double* dy, double* dpg, double* dw) {
  const int64_t mg = s.out / s.groups;
  ConstBlock p(pg, s.rows, s.in, Stride(s.groups * s.in));
  ConstBlock wg(w + g * mg * s.in, mg, s.in, Stride(s.in));
  ConstBlock dyg(dy + g * mg, s.rows, mg, Stride(s.out));
  if (dw != nullptr) {
    Block dwg(dw + g * mg * s.in, mg, s.in, Stride(s.in));
    dwg.noalias() += dyg.transpose() * p;
  }
  if (dpg != nullptr) {
    Block dp(dpg, s.rows, s.in, Stride(s.groups * s.in));
    dp.noalias() = dyg * wg;
  }
}

}  // namespace quantd::train
