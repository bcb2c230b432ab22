// The report's per-tensor sums: signal = sum(f^2) and noise = sum((f - q)^2)
// in float64, element by element in order (one rounding per multiply and
// per add, no fused multiply-add), so the figures are the same whichever
// function computed them. Each sum is a chain of dependent additions; four
// tensors' chains run side by side in the four lanes of an AVX2 register
// (checked at run time), about four times the throughput of one.
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_SQUARED_ERROR_SUMS_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_SQUARED_ERROR_SUMS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/tensor.h"

namespace quantd {

struct SquaredErrorSums {
  double signal = 0, noise = 0;
};

// Zero sums unless both are float tensors of the same element count.
SquaredErrorSums CompareTensors(const Tensor& f, const Tensor& q);

// CompareTensors of pairs streamed through the four lanes: a pair takes a
// free lane as it comes; when all four are taken, the lanes advance
// together until one pair is done, whose sums go to `done` and whose
// tensors are released. So at most four pairs are held, whatever their
// sizes, and a lane is idle only at Finish. Each sum is still one chain in
// element order: the same bits as CompareTensors, in any arrival order.
class SquaredErrorLanes {
 public:
  using Done =
      std::function<void(const std::string& name, const SquaredErrorSums&)>;
  explicit SquaredErrorLanes(Done done);
  ~SquaredErrorLanes();
  SquaredErrorLanes(const SquaredErrorLanes&) = delete;
  SquaredErrorLanes& operator=(const SquaredErrorLanes&) = delete;

  // `done` may run before Add returns, for this pair or an earlier one.
  void Add(std::string name, Tensor f, Tensor q);
  // The pairs still held.
  void Finish();

 private:
  struct Lane {
    std::string name;
    Tensor f, q;
    int64_t offset;  // elements already added
    SquaredErrorSums sums;
    int64_t left() const { return f.num_elements() - offset; }
  };
  void Advance();

  Done done_;
  std::vector<Lane> lanes_;
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_SQUARED_ERROR_SUMS_H_
