// The float side of the mixed-precision sensitivity (sensitivity.h): the
// float model runs once per sample and keeps only the tensors the
// evaluations read (the cones' inputs) or compare (the points and outputs
// inside some cone), with the float-side sums of every compared tensor, so
// that no candidate recomputes them. Samples run in chunks: nothing holds
// all samples' activations of the whole graph.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_INTERNAL_FLOAT_REFERENCE_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_INTERNAL_FLOAT_REFERENCE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"
#include "core/mixed_precision/sample_distance.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"

namespace quantd::mp_internal {

// One sample's float run: the kept tensors (feeds included when kept) and
// the sums of the summed ones.
struct FloatSample {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, mixed_precision::FloatSideSums> sums;
  int64_t bytes() const;
};

class FloatReference {
 public:
  // `keep`: tensors to keep; `summed`: kept float tensors whose sums every
  // candidate needs (those measured with DistanceToFloat).
  static absl::StatusOr<std::unique_ptr<FloatReference>> Create(
      const Model& model, std::set<std::string> keep,
      std::set<std::string> summed, const CancellationToken* cancel);

  // Samples [begin, end), in parallel on `pool`, appended to `out`.
  absl::Status Run(const std::vector<SampleFeeds>& samples, size_t begin,
                   size_t end, ThreadPool* pool,
                   std::vector<FloatSample>* out) const;

 private:
  FloatReference() = default;

  std::unique_ptr<Executor> exec_;
  RunOptions run_;
  std::set<std::string> keep_, summed_;
};

}  // namespace quantd::mp_internal

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_INTERNAL_FLOAT_REFERENCE_H_
