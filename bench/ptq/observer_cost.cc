#include "bench/ptq/observer_cost.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "core/executor/executor.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/pipeline/prep/graph_prep.h"
#include "core/util/status_macros.h"

namespace quantd::bench {

Seconds Now() {
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  Seconds s;
  s.wall = std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
               .count();
  s.cpu = static_cast<double>(cpu.tv_sec) + 1e-9 * cpu.tv_nsec;
  return s;
}

std::function<absl::Status(const std::string&)> StageRecorder::OnStageStart() {
  return [this](const std::string& stage) {
    starts_.emplace_back(stage, Now());
    return absl::OkStatus();
  };
}

std::function<absl::Status(const JobInput&)> StageRecorder::OnPreflight() {
  return [this](const JobInput& input) {
    input_ = input;
    return absl::OkStatus();
  };
}

Seconds StageRecorder::Stage(const std::string& stage) const {
  for (size_t i = 0; i + 1 < starts_.size(); ++i) {
    if (starts_[i].first != stage) continue;
    const Seconds& a = starts_[i].second;
    const Seconds& b = starts_[i + 1].second;
    return {b.wall - a.wall, b.cpu - a.cpu};
  }
  return {};
}

std::vector<std::string> StageRecorder::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, start] : starts_) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  return names;
}

absl::StatusOr<Seconds> TimeFloatPass(const JobInput& input, ThreadPool* pool) {
  Model model = input.model;
  std::map<std::string, std::vector<int64_t>> shapes;
  if (!input.calibration.empty()) {
    for (const auto& [name, t] : input.calibration[0]) shapes[name] = t.shape();
  }
  std::vector<std::string> warnings;
  RETURN_IF_ERROR(PrepareGraph(input.spec.ptq, shapes, &model, &warnings));
  const Seconds start = Now();
  ExecutorOptions options;
  options.pool = pool;
  ASSIGN_OR_RETURN(
      std::unique_ptr<Executor> exec,
      Executor::Create(std::make_shared<const Model>(std::move(model)),
                       options));
  const std::vector<SampleFeeds>& samples = input.calibration;
  RETURN_IF_ERROR(ParallelForSamples(
      static_cast<int64_t>(samples.size()), pool, nullptr, SampleProgress{},
      [&](int64_t i) { return exec->Run(samples[i]).status(); }));
  const Seconds end = Now();
  return Seconds{end.wall - start.wall, end.cpu - start.cpu};
}

}  // namespace quantd::bench
