// NumPy's pairwise summation of an array that is constant except at a few
// indices, in time proportional to the exceptions (plus a few constant
// blocks), with the exact rounding of the dense PairwiseSum.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_SPARSE_SUM_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_SPARSE_SUM_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/quantizers/internal/numpy_compat.h"

namespace quantd::quantizers::internal {

template <typename T>
class SparsePairwiseSummer {
 public:
  // entries: (index, value) sorted by index, indices in [0, n); every other
  // element equals c.
  SparsePairwiseSummer(const std::vector<std::pair<int64_t, T>>& entries, T c)
      : e_(entries), c_(c) {}

  T Sum(int64_t n) { return Rec(0, n, 0, e_.size()); }

 private:
  T At(int64_t i, size_t& k, size_t end) const {
    if (k < end && e_[k].first == i) return e_[k++].second;
    return c_;
  }

  T ConstSum(int64_t n) {
    auto it = memo_.find(n);
    if (it != memo_.end()) return it->second;
    T v;
    if (n <= 128) {
      std::vector<T> tmp(n, c_);
      v = PairwiseSum(tmp.data(), n);
    } else {
      int64_t n2 = n / 2;
      n2 -= n2 % 8;
      v = ConstSum(n2) + ConstSum(n - n2);
    }
    memo_[n] = v;
    return v;
  }

  // Sum of [lo, lo + n) whose exceptions are e_[b, end).
  T Rec(int64_t lo, int64_t n, size_t b, size_t end) {
    if (b == end) return ConstSum(n);
    if (n <= 128) {
      T buf[128];
      size_t k = b;
      for (int64_t i = 0; i < n; ++i) buf[i] = At(lo + i, k, end);
      return PairwiseSum(buf, n);
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    size_t mid = b;
    while (mid < end && e_[mid].first < lo + n2) ++mid;
    return Rec(lo, n2, b, mid) + Rec(lo + n2, n - n2, mid, end);
  }

  const std::vector<std::pair<int64_t, T>>& e_;
  T c_;
  std::map<int64_t, T> memo_;
};

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_SPARSE_SUM_H_
