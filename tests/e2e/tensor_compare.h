// Comparison of our outputs against a reference (ONNX Runtime's), with the
// figures the end-to-end tests print.
#ifndef QUANTD_TESTS_E2E_TENSOR_COMPARE_H_
#define QUANTD_TESTS_E2E_TENSOR_COMPARE_H_

#include <cstdint>
#include <string>

#include "core/graph/tensor.h"

namespace quantd::e2e {

struct Comparison {
  bool same_shape = false;
  bool same_dtype = false;
  int64_t elements = 0;
  double max_abs_error = 0;  // max |ours - ref|
  double max_abs_ref = 0;    // max |ref|
  // max |ours - ref| / max |ref|: the error relative to the output's scale,
  // robust to elements near zero. 0 when both are all zero.
  double relative_error = 0;
  int64_t non_finite_mismatches = 0;  // NaN/Inf where the other is not
  // Rows along the last axis whose argmax differs (classifier top-1,
  // per-timestep CTC labels); -1 for outputs with fewer than 2 classes.
  int64_t argmax_rows = -1;
  int64_t argmax_disagreements = 0;

  std::string Summary() const;  // "max abs 1.2e-07, rel 3.4e-08, ..."
};

// Both tensors are compared as float64 values (integer outputs too, where
// every difference shows as an error).
Comparison CompareTensors(const Tensor& ours, const Tensor& ref);

}  // namespace quantd::e2e

#endif  // QUANTD_TESTS_E2E_TENSOR_COMPARE_H_
