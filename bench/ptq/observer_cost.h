// What calibration's observers cost: the job's calibrate
// stage against a plain float pass of the executor over the same samples on
// the same prepared graph, in the same process, wall and process CPU time.
#ifndef QUANTD_BENCH_PTQ_OBSERVER_COST_H_
#define QUANTD_BENCH_PTQ_OBSERVER_COST_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/pipeline/job/preflight.h"
#include "core/runtime/thread_pool.h"

namespace quantd::bench {

struct Seconds {
  double wall = 0;
  double cpu = 0;  // of the whole process (every thread)
};

Seconds Now();

// Records the start of every stage (JobContext::on_stage_start) and keeps a
// copy of the job's options, imported model and samples (on_preflight).
class StageRecorder {
 public:
  std::function<absl::Status(const std::string&)> OnStageStart();
  std::function<absl::Status(const JobInput&)> OnPreflight();
  // From the start of `stage` to the start of the next one.
  Seconds Stage(const std::string& stage) const;
  // The stages in the order they started.
  std::vector<std::string> Names() const;
  const JobInput& input() const { return input_; }

 private:
  std::vector<std::pair<std::string, Seconds>> starts_;
  JobInput input_;
};

// The graph prepared as the job prepares it, an executor on `pool`, then
// every calibration sample run once, parallel over samples as calibration
// runs them, with no observer.
absl::StatusOr<Seconds> TimeFloatPass(const JobInput& input, ThreadPool* pool);

}  // namespace quantd::bench

#endif  // QUANTD_BENCH_PTQ_OBSERVER_COST_H_
