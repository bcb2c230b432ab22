// Reusable temporaries of backward passes. A caller that runs many passes
// (the Hutchinson iterations of one sample) keeps one Scratch per thread and
// passes it to every GradientGraph::Backward(): the kernels' large buffers
// (a Conv's im2col patches, in double) are then allocated once instead of
// once per pass, which also spares the page faults of fresh allocations.
// Not thread-safe: one Scratch per concurrent pass.
#ifndef QUANTD_CORE_AUTODIFF_SCRATCH_H_
#define QUANTD_CORE_AUTODIFF_SCRATCH_H_

#include <cstddef>
#include <memory>
#include <vector>

namespace quantd::autodiff {

class Scratch {
 public:
  // Buffer `slot` with room for at least `n` doubles; its contents are
  // unspecified. Valid until the next call with the same slot.
  // Not initialised: pages a pass never touches are never mapped.
  double* Doubles(size_t slot, size_t n) {
    if (buffers_.size() <= slot) buffers_.resize(slot + 1);
    Buffer& b = buffers_[slot];
    if (b.size < n) {
      b.data.reset(new double[n]);
      b.size = n;
    }
    return b.data.get();
  }

 private:
  struct Buffer {
    std::unique_ptr<double[]> data;
    size_t size = 0;
  };
  std::vector<Buffer> buffers_;
};

}  // namespace quantd::autodiff

#endif  // QUANTD_CORE_AUTODIFF_SCRATCH_H_
