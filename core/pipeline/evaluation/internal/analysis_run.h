// The per-layer analysis's run (sensitivity_analysis.h): the exact
// analysis's cone runs (sensitivity_analysis.cc) and the first-order
// estimate (sensitivity_estimate.cc) share its preparation, its float run
// and its figures.
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_INTERNAL_ANALYSIS_RUN_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_INTERNAL_ANALYSIS_RUN_H_

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/autodiff/gradient_graph.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/downstream_cone.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/pipeline/export/fake_quant.h"

namespace quantd::analysis_internal {

using Tensors = std::map<std::string, Tensor>;

// Node 0 of `cone` (the cone's start, node `index` of its model) takes the
// inputs `other` gives that node; its constants come along.
void TakeNodeFrom(const Model& other, int index, DownstreamCone* cone);

// sum f^2 of a float tensor (0 for other types).
double Energy(const Tensor& f);

// A node with planned items and its planned output activations.
struct Unit {
  int node = 0;
  std::set<std::string> tensors;  // its planned activations
};

class AnalysisRun {
 public:
  AnalysisRun(const Model& float_model, const Model& quantized_model,
              const QdqPlan& plan, const std::vector<SampleFeeds>& samples,
              const SensitivityAnalysisOptions& options, int probes,
              ThreadPool* pool, const CancellationToken* cancel,
              ProgressSink* progress)
      : float_model_(float_model),
        quantized_(quantized_model),
        plan_(plan),
        samples_(samples),
        chunk_(std::max(1, options.chunk_samples)),
        first_task_(options.only_float_runs ? 1 : 0),
        probes_(std::max(0, probes)),
        pool_(pool),
        cancel_(cancel),
        progress_(progress) {}

  absl::StatusOr<std::vector<LayerSensitivity>> Run();

 private:
  absl::Status Prepare();
  absl::Status RunFull(size_t begin, std::vector<Tensors>* floats,
                       std::vector<Tensors>* fakes);
  absl::Status RunTask(size_t t, size_t begin,
                       const std::vector<Tensors>& floats,
                       const std::vector<Tensors>& fakes);
  void CountDone();
  absl::Status PrepareEstimate();
  absl::Status EstimateSample(size_t global, const Tensors& floats);
  absl::StatusOr<std::vector<Tensor>> UnitChange(size_t u,
                                                 const Tensors& floats) const;

  const Model& float_model_;
  const Model& quantized_;
  const QdqPlan& plan_;
  const std::vector<SampleFeeds>& samples_;
  const int chunk_;
  const size_t first_task_;  // of each node's two: 1 skips only-quantized
  const int probes_;         // > 0: the first-order estimate
  ThreadPool* pool_;
  const CancellationToken* cancel_;
  ProgressSink* progress_;

  Model float_form_;
  Model fake_quant_;
  std::unique_ptr<Executor> float_exec_, fake_exec_;
  std::unique_ptr<ActivationFakeQuantizer> full_quantizer_;
  RunOptions keep_all_;
  std::vector<Unit> units_;
  std::map<std::string, DType> dtypes_;
  // Per sample: the reference's energy; per output and sample: the fully
  // quantized model's noise; per task (2 per unit: only quantized, only
  // float) and sample: the noise.
  std::vector<double> signal_;
  std::vector<std::vector<double>> full_noise_;
  std::vector<std::vector<double>> noise_;
  int64_t total_work_ = 0;
  std::atomic<int64_t> done_{0};
  // The estimate: the float form's gradients, each unit's one-node run (its
  // quantized output from the float cache), and per unit and sample the
  // estimated noise.
  std::unique_ptr<autodiff::GradientGraph> gradients_;
  struct UnitNode {
    DownstreamCone cone;
    std::unique_ptr<Executor> exec;
    std::unique_ptr<ActivationFakeQuantizer> quantizer;
    std::vector<std::string> outputs;
  };
  std::vector<UnitNode> unit_nodes_;
  std::map<std::string, std::pair<size_t, size_t>> output_of_;  // unit, output
  std::vector<std::vector<double>> estimate_;
};

}  // namespace quantd::analysis_internal

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_INTERNAL_ANALYSIS_RUN_H_
