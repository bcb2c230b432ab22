// A QdqWeight by hand for the analysis tests: `w` rounded onto a
// per-tensor int8 grid of step `scale`.
#ifndef QUANTD_TESTS_CORE_PIPELINE_EVALUATION_HAND_QDQ_WEIGHT_H_
#define QUANTD_TESTS_CORE_PIPELINE_EVALUATION_HAND_QDQ_WEIGHT_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/qdq/qdq_plan.h"

namespace quantd::testing {

inline QdqWeight HandQdqWeight(const std::string& node,
                               const std::vector<float>& w,
                               std::vector<int64_t> shape, float scale) {
  QdqWeight q;
  q.node = node;
  q.input_index = 1;
  q.storage = {DType::kInt8, -127, 127};
  q.scales = {scale};
  std::vector<int32_t> ints;
  for (float v : w) {
    ints.push_back(static_cast<int32_t>(std::nearbyint(v / scale)));
  }
  q.int_values = Tensor::FromVector<int32_t>(ints, std::move(shape));
  return q;
}

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_CORE_PIPELINE_EVALUATION_HAND_QDQ_WEIGHT_H_
