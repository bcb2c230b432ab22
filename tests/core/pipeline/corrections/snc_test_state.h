// The shift-negative correction's test case, shared by corrections_test and
// substitutions_test: x -> LeakyRelu(0.01) "act" -> Conv "conv", with the
// LeakyRelu output 'a' planned as signed 8-bit POWER_OF_TWO, threshold 16,
// and statistics min -0.1, max 10 (|min| / T = 0.00625 <= 0.05: corrected).
#ifndef QUANTD_TESTS_CORE_PIPELINE_CORRECTIONS_SNC_TEST_STATE_H_
#define QUANTD_TESTS_CORE_PIPELINE_CORRECTIONS_SNC_TEST_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/pipeline/job/job_state.h"

namespace quantd {

struct SncConv {
  std::vector<int64_t> x_shape;  // NCHW
  std::vector<float> w;
  std::vector<int64_t> w_shape;
  std::vector<float> bias;    // empty: no bias input
  std::vector<int64_t> pads;  // empty: no pads attribute
};

JobState LeakyReluConvSncState(const SncConv& conv);

// The case's plan and statistics for the activation `tensor` of node
// `node`: signed 8-bit POWER_OF_TWO, threshold 16, min -0.1, max 10.
void PlanSncActivation(int node, const std::string& tensor, JobState* s);

}  // namespace quantd

#endif  // QUANTD_TESTS_CORE_PIPELINE_CORRECTIONS_SNC_TEST_STATE_H_
