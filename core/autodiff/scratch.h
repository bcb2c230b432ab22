// Reusable temporaries of backward passes. A caller that runs many passes
// (the Hutchinson iterations of one sample) keeps one Scratch per thread and
// passes it to every GradientGraph::Backward(): the kernels' large buffers
// (a Conv's im2col patches, in double) are then allocated once instead of
// once per pass, which also spares the page faults of fresh allocations.
// Not thread-safe: one Scratch per concurrent pass.
#ifndef QUANTD_CORE_AUTODIFF_SCRATCH_H_
#define QUANTD_CORE_AUTODIFF_SCRATCH_H_

#include <cstddef>
#include <vector>

namespace quantd::autodiff {

class Scratch {
 public:
  // Buffer `slot` with room for at least `n` doubles; its contents are
  // unspecified. Valid until the next call with the same slot.
  double* Doubles(size_t slot, size_t n) {
    if (buffers_.size() <= slot) buffers_.resize(slot + 1);
    std::vector<double>& b = buffers_[slot];
    if (b.size() < n) b.resize(n);
    return b.data();
  }

 private:
  std::vector<std::vector<double>> buffers_;
};

}  // namespace quantd::autodiff

#endif  // QUANTD_CORE_AUTODIFF_SCRATCH_H_
