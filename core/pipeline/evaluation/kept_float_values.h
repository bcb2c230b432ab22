// The float model's values of evaluation samples, kept from the calibration
// pass (the same executor on the same samples) so that the report does not
// run the float model again. Bounded by a byte budget: a sample whose values
// do not fit is not kept, and the report recomputes it (same values either
// way, so which samples were kept never changes a figure).
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_KEPT_FLOAT_VALUES_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_KEPT_FLOAT_VALUES_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/graph/tensor.h"

namespace quantd {

// What calibration keeps, and for which samples.
struct KeepFloatValuesRequest {
  std::set<std::string> tensors;  // node outputs to keep, any dtype
  int64_t samples = 0;            // samples [0, samples)
  int64_t budget_bytes = 0;       // over every kept tensor and output
};

struct KeptFloatValues {
  std::map<std::string, Tensor> tensors;  // the requested node outputs
  std::map<std::string, Tensor> outputs;  // the graph outputs (Run's result)
};

// Per sample; nullopt where the sample was not kept.
struct KeptFloatRuns {
  std::set<std::string> tensors;  // the request's tensors
  std::vector<std::optional<KeptFloatValues>> samples;
  int64_t num_kept() const {
    int64_t n = 0;
    for (const auto& s : samples) n += s.has_value();
    return n;
  }
};

// Budget of a job: 64 MiB (MobileNetV2 at 224x224: one of the 16 default
// evaluation samples; ppocr_cls: all 16), counted by the admission estimate
// (preflight.h). More saves little time (MobileNetV2's report: 0.18 s for
// five samples) and would put the job past its memory target.
inline constexpr int64_t kKeptFloatValuesBudgetBytes = int64_t{64} << 20;

// Of `samples`, how many keep their values: those that fit the budget
// whole at `bytes_per_sample` each (unknown, 0: all may try, and the
// budget stops them). Only these start keeping: one that overflows holds up
// to the whole budget in its run's buffers until it gives up (ppocr_det
// and ppocr_rec, over 100 MiB a sample, would hold 64 MiB trying).
inline int64_t SamplesKeptWhole(int64_t bytes_per_sample, int64_t samples) {
  if (bytes_per_sample <= 0) return samples;
  return std::min(samples, kKeptFloatValuesBudgetBytes / bytes_per_sample);
}

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_KEPT_FLOAT_VALUES_H_
