#include "core/pipeline/mixed_precision/internal/float_reference.h"

#include <utility>

#include "core/pipeline/job/parallel_samples.h"
#include "core/util/status_macros.h"

namespace quantd::mp_internal {

int64_t FloatSample::bytes() const {
  int64_t total = 0;
  for (const auto& [name, t] : tensors) {
    total += static_cast<int64_t>(t.byte_size());
  }
  return total;
}

absl::StatusOr<std::unique_ptr<FloatReference>> FloatReference::Create(
    const Model& model, std::set<std::string> keep,
    std::set<std::string> summed, const CancellationToken* cancel) {
  std::unique_ptr<FloatReference> ref(new FloatReference());
  // Kernels single-threaded: samples (and later tasks) run in parallel.
  ASSIGN_OR_RETURN(ref->exec_,
                   Executor::Create(std::make_shared<const Model>(model),
                                    ExecutorOptions()));
  std::set<std::string> graph_outputs;
  for (const auto& out : model.graph.outputs) graph_outputs.insert(out.name);
  ref->run_.cancel = cancel;
  for (const Node& n : model.graph.nodes) {
    for (const auto& out : n.outputs) {
      if (!out.empty() && keep.count(out) && !graph_outputs.count(out)) {
        ref->run_.extra_outputs.push_back(out);
      }
    }
  }
  ref->keep_ = std::move(keep);
  ref->summed_ = std::move(summed);
  return ref;
}

absl::Status FloatReference::Run(const std::vector<SampleFeeds>& samples,
                                 size_t begin, size_t end, ThreadPool* pool,
                                 std::vector<FloatSample>* out) const {
  const size_t first = out->size();
  out->resize(first + (end - begin));
  return ParallelForSamples(
      static_cast<int64_t>(end - begin), pool, run_.cancel, SampleProgress(),
      [&](int64_t s) -> absl::Status {
        const SampleFeeds& feeds = samples[begin + s];
        ASSIGN_OR_RETURN(auto produced, exec_->Run(feeds, run_));
        FloatSample& sample = (*out)[first + s];
        for (auto& [name, t] : produced) {
          if (keep_.count(name)) sample.tensors.emplace(name, std::move(t));
        }
        for (const auto& [name, t] : feeds) {
          if (keep_.count(name)) sample.tensors[name] = t;
        }
        for (const auto& [name, t] : sample.tensors) {
          if (summed_.count(name) && t.dtype() == DType::kFloat) {
            sample.sums[name] = mixed_precision::SumFloatSide(t.span<float>());
          }
        }
        return absl::OkStatus();
      });
}

}  // namespace quantd::mp_internal
