#include "core/pipeline/mixed_precision/sensitivity.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/mixed_precision/sample_distance.h"
#include "core/mixed_precision/sensitivity_metric.h"
#include "core/pipeline/evaluation/downstream_cone.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/mixed_precision/internal/float_reference.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

namespace mp = ::quantd::mixed_precision;
using mp_internal::FloatReference;
using mp_internal::FloatSample;

// The fewest samples a chunk holds (but for a smaller sample set): each
// chunk builds every task's cone executor again.
constexpr int kMinChunkSamples = 4;

// The downstream cone of a node and the rows (indices into the caller's
// points, then outputs at num_points + o) it produces.
struct Cone {
  DownstreamCone cone;
  // The rows measured, by tensor name, and (row, measured row) for a row
  // that compares the same tensor with the same distance as an earlier one
  // (an interest point that is also a graph output): its distances are
  // copied.
  std::map<std::string, std::vector<int>> rows_of;
  std::vector<std::pair<int, int>> copies;
};

// One sensitivity evaluation: node k at its candidate j.
struct Task {
  int k, j;
};

// Only `node` quantized, with `cand`.
ModelQuantization SingleNodeQuantization(const Node& node,
                                         const SensitivityCandidate& cand) {
  ModelQuantization m;
  NodeQuantization& qn = m.nodes.emplace_back();
  qn.node = node.name;
  qn.weights = &cand.weights;
  if (cand.activation) qn.activations.push_back(&*cand.activation);
  return m;
}

// A task's cone ready to run on one chunk: the executor of its fake-quant
// model and the run options.
struct ConeRunner {
  std::unique_ptr<Executor> exec;
  std::unique_ptr<ActivationFakeQuantizer> quantizer;
  RunOptions run;
};

// ComputeSensitivities' state. Samples go in chunks: a float run of the
// chunk (internal/float_reference.h), then every task on the chunk, each
// writing its distances; the aggregation at the end runs in a fixed order.
class SensitivityRun {
 public:
  SensitivityRun(const Model& model, const std::vector<SensitivityNode>& nodes,
                 const std::vector<InterestPoint>& points,
                 const std::vector<InterestPoint>& outputs,
                 const std::vector<SampleFeeds>& samples,
                 const SensitivityOptions& options, ThreadPool* pool,
                 const CancellationToken* cancel, ProgressSink* progress)
      : model_(model),
        g_(model.graph),
        nodes_(nodes),
        samples_(samples),
        options_(options),
        pool_(pool),
        cancel_(cancel),
        progress_(progress),
        num_samples_(samples.size()),
        num_points_(points.size()) {
    rows_ = points;
    rows_.insert(rows_.end(), outputs.begin(), outputs.end());
  }

  absl::StatusOr<std::vector<std::vector<double>>> Run();

 private:
  absl::Status Validate() const;
  absl::Status Prepare();
  void SetConeInputTypes(const FloatSample& sample);
  size_t ChunkFor(const FloatSample& sample) const;
  absl::Status RunTasks(size_t begin, const std::vector<FloatSample>& cache);
  absl::StatusOr<ConeRunner> MakeRunner(const Task& task) const;
  absl::Status MeasureTask(const Task& task, size_t begin,
                           const std::vector<FloatSample>& cache,
                           std::vector<double>* d) const;
  absl::Status MeasureRow(int row, const FloatSample& floats, const Tensor& got,
                          size_t sample, std::vector<double>* d) const;
  void CountDone();
  absl::StatusOr<std::vector<std::vector<double>>> Aggregate() const;

  const Model& model_;
  const Graph& g_;
  const std::vector<SensitivityNode>& nodes_;
  std::vector<InterestPoint> rows_;  // the points, then the outputs
  const std::vector<SampleFeeds>& samples_;
  const SensitivityOptions& options_;
  ThreadPool* pool_;
  const CancellationToken* cancel_;
  ProgressSink* progress_;
  const size_t num_samples_, num_points_;

  std::unique_ptr<FloatReference> float_;
  std::vector<Task> tasks_;
  // dist_[t] = [rows][num_samples], zero outside the cone.
  std::vector<std::vector<double>> dist_;
  std::vector<Cone> cones_;
  int64_t total_work_ = 0;
  std::atomic<int64_t> done_{0};
};

absl::StatusOr<std::vector<std::vector<double>>> SensitivityRun::Run() {
  RETURN_IF_ERROR(Validate());
  RETURN_IF_ERROR(Prepare());
  // The first sample alone: its cache decides the chunk size and gives the
  // cones' input types.
  std::vector<FloatSample> cache;
  RETURN_IF_ERROR(float_->Run(samples_, 0, 1, pool_, &cache));
  SetConeInputTypes(cache[0]);
  const size_t chunk = ChunkFor(cache[0]);
  total_work_ = static_cast<int64_t>(tasks_.size()) *
                static_cast<int64_t>((num_samples_ + chunk - 1) / chunk);
  for (size_t begin = 0; begin < num_samples_; begin += chunk) {
    const size_t end = std::min(num_samples_, begin + chunk);
    if (begin > 0) cache.clear();
    RETURN_IF_ERROR(
        float_->Run(samples_, begin + cache.size(), end, pool_, &cache));
    RETURN_IF_ERROR(RunTasks(begin, cache));
  }
  return Aggregate();
}

absl::Status SensitivityRun::Validate() const {
  if (num_samples_ == 0) {
    return absl::InvalidArgumentError("sensitivity: no samples");
  }
  for (const SensitivityNode& n : nodes_) {
    if (n.node < 0 || n.node >= static_cast<int>(g_.nodes.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensitivity: node index ", n.node, " out of range"));
    }
  }
  return absl::OkStatus();
}

// The cones (their input types are set from the first float run), the
// tensors the float runs keep and the tasks.
absl::Status SensitivityRun::Prepare() {
  std::set<std::string> keep, summed, points;
  for (size_t r = 0; r < num_points_; ++r) points.insert(rows_[r].tensor);
  // The first row of each (tensor, distance).
  std::map<std::pair<std::string, DistanceKind>, int> first_row;
  std::vector<int> measured_as(rows_.size());
  for (size_t r = 0; r < rows_.size(); ++r) {
    measured_as[r] =
        first_row
            .emplace(std::make_pair(rows_[r].tensor, rows_[r].kind),
                     static_cast<int>(r))
            .first->second;
  }
  for (const SensitivityNode& n : nodes_) {
    Cone& cone = cones_.emplace_back();
    cone.cone = BuildDownstreamCone(model_, n.node, {}, points, options_.depth);
    const std::set<std::string>& produced = cone.cone.produced;
    for (size_t r = 0; r < rows_.size(); ++r) {
      const InterestPoint& ip = rows_[r];
      if (!produced.count(ip.tensor)) continue;
      if (measured_as[r] != static_cast<int>(r)) {
        cone.copies.emplace_back(static_cast<int>(r), measured_as[r]);
        continue;
      }
      cone.rows_of[ip.tensor].push_back(static_cast<int>(r));
      keep.insert(ip.tensor);
      if (ip.kind != DistanceKind::kKl) summed.insert(ip.tensor);
    }
    keep.insert(cone.cone.inputs.begin(), cone.cone.inputs.end());
  }
  ASSIGN_OR_RETURN(float_, FloatReference::Create(model_, std::move(keep),
                                                  std::move(summed), cancel_));
  for (size_t k = 0; k < nodes_.size(); ++k) {
    for (size_t j = 0; j < nodes_[k].candidates.size(); ++j) {
      tasks_.push_back({static_cast<int>(k), static_cast<int>(j)});
    }
  }
  dist_.assign(tasks_.size(),
               std::vector<double>(rows_.size() * num_samples_, 0.0));
  return absl::OkStatus();
}

// A cone input takes the type the float run gave it (float when absent, as
// BuildDownstreamCone).
void SensitivityRun::SetConeInputTypes(const FloatSample& sample) {
  for (Cone& cone : cones_) {
    for (ValueInfo& v : cone.cone.model->graph.inputs) {
      auto it = sample.tensors.find(v.name);
      v.dtype = it == sample.tensors.end() ? DType::kFloat : it->second.dtype();
    }
  }
}

// At most chunk_samples, within the byte budget but kMinChunkSamples at
// least.
size_t SensitivityRun::ChunkFor(const FloatSample& sample) const {
  return static_cast<size_t>(SensitivityChunkSamples(
      sample.bytes(), static_cast<int>(num_samples_), options_));
}

absl::Status SensitivityRun::RunTasks(size_t begin,
                                      const std::vector<FloatSample>& cache) {
  std::vector<absl::Status> task_status(tasks_.size());
  auto run_tasks = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      task_status[t] = MeasureTask(tasks_[t], begin, cache, &dist_[t]);
      // A failed (or cancelled) task is not progress.
      if (task_status[t].ok()) CountDone();
    }
  };
  if (pool_ != nullptr) {
    pool_->ParallelFor(static_cast<int64_t>(tasks_.size()), 1, run_tasks);
  } else {
    run_tasks(0, static_cast<int64_t>(tasks_.size()));
  }
  for (size_t t = 0; t < tasks_.size(); ++t) {
    if (!task_status[t].ok()) {
      const Node& node = g_.nodes[nodes_[tasks_[t].k].node];
      return absl::Status(
          task_status[t].code(),
          absl::StrCat("sensitivity of ", node.Label(), " candidate ",
                       tasks_[t].j, ": ", task_status[t].message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ConeRunner> SensitivityRun::MakeRunner(const Task& task) const {
  const SensitivityNode& sn = nodes_[task.k];
  const Cone& cone = cones_[task.k];
  const ModelQuantization quantization =
      SingleNodeQuantization(g_.nodes[sn.node], sn.candidates[task.j]);
  ASSIGN_OR_RETURN(QdqPlan plan,
                   LowerToQdqPlan(cone.cone.model->graph, quantization, {}));
  ASSIGN_OR_RETURN(Model fq, WithFakeQuantWeights(*cone.cone.model, plan));
  ConeRunner runner;
  ASSIGN_OR_RETURN(runner.exec,
                   Executor::Create(std::move(fq), ExecutorOptions()));
  runner.quantizer = std::make_unique<ActivationFakeQuantizer>(plan);
  runner.run.cancel = cancel_;
  runner.run.rewriter = &runner.quantizer->rewriter();
  return runner;
}

// Only the task's node quantized, with its candidate: the cone runs on each
// of the chunk's float inputs, and each compared tensor is measured against
// the float one as soon as the cone makes it (still in cache; nothing is
// kept past its last consumer).
absl::Status SensitivityRun::MeasureTask(const Task& task, size_t begin,
                                         const std::vector<FloatSample>& cache,
                                         std::vector<double>* d) const {
  if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
  const Cone& cone = cones_[task.k];
  if (cone.rows_of.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(ConeRunner runner, MakeRunner(task));
  for (size_t s = 0; s < cache.size(); ++s) {
    const FloatSample& floats = cache[s];
    absl::Status measured;
    const TensorObserver measure = [&](const Node& node, int k,
                                       const Tensor& got) {
      auto it = cone.rows_of.find(node.outputs[k]);
      if (it == cone.rows_of.end() || !measured.ok()) return;
      for (int row : it->second) {
        measured.Update(MeasureRow(row, floats, got, begin + s, d));
      }
    };
    runner.run.observer = &measure;
    auto feeds = DownstreamConeFeeds(cone.cone, floats.tensors);
    if (!feeds.ok()) {
      return absl::Status(
          feeds.status().code(),
          absl::StrCat("sensitivity: ", feeds.status().message()));
    }
    RETURN_IF_ERROR(runner.exec->Run(*feeds, runner.run).status());
    RETURN_IF_ERROR(measured);
  }
  for (const auto& [row, from] : cone.copies) {
    std::copy_n(d->data() + from * num_samples_ + begin, cache.size(),
                d->data() + row * num_samples_ + begin);
  }
  return absl::OkStatus();
}

// The distance at `row` for one sample: a non-float tensor (on either side)
// is at distance 0, one the float run did not keep is not measured.
absl::Status SensitivityRun::MeasureRow(int row, const FloatSample& floats,
                                        const Tensor& got, size_t sample,
                                        std::vector<double>* d) const {
  const InterestPoint& ip = rows_[row];
  double& out = (*d)[row * num_samples_ + sample];
  auto f = floats.tensors.find(ip.tensor);
  if (f == floats.tensors.end()) return absl::OkStatus();
  if (f->second.dtype() != DType::kFloat || got.dtype() != DType::kFloat) {
    out = 0.0;
    return absl::OkStatus();
  }
  if (f->second.num_elements() != got.num_elements()) {
    return absl::InternalError(
        absl::StrCat("sensitivity: tensor '", ip.tensor,
                     "' changed size under quantization"));
  }
  if (ip.kind == DistanceKind::kKl) {
    // Clipping both sides to 1e-8 can leave sum p log(p/q) a rounding
    // error below 0 when q is p.
    ASSIGN_OR_RETURN(double kl, mp::KlDivergence(f->second.span<float>(),
                                                 got.span<float>()));
    out = std::max(0.0, kl);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(
      out, mp::DistanceToFloat(ip.kind == DistanceKind::kCosine
                                   ? mp::SampleDistance::kCosine
                                   : mp::SampleDistance::kNormalizedMse,
                               f->second.span<float>(), got.span<float>(),
                               floats.sums.at(ip.tensor)));
  return absl::OkStatus();
}

void SensitivityRun::CountDone() {
  const int64_t dn = ++done_;
  if (progress_ != nullptr && (dn % 8 == 0 || dn == total_work_)) {
    progress_->Report({stage::kMixedPrecision,
                       static_cast<double>(dn) / total_work_,
                       absl::StrCat("sensitivity ", dn, "/", total_work_)});
  }
}

// Per task, MCT's metric over the points and outputs, in task order.
absl::StatusOr<std::vector<std::vector<double>>> SensitivityRun::Aggregate()
    const {
  const size_t num_outputs = rows_.size() - num_points_;
  std::vector<std::vector<double>> result(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    result[k].resize(nodes_[k].candidates.size());
  }
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const std::vector<double>& d = dist_[t];
    absl::Span<const double> pts(d.data(), num_points_ * num_samples_);
    absl::Span<const double> outs(d.data() + num_points_ * num_samples_,
                                  num_outputs * num_samples_);
    double m = 0;
    if (num_points_ > 0) {
      ASSIGN_OR_RETURN(
          m, mp::SensitivityMetric(pts, num_points_, outs, num_outputs,
                                   num_samples_, options_.weighting));
    } else if (num_outputs > 0) {
      // No interest point: the graph outputs alone (their mean distance).
      ASSIGN_OR_RETURN(m,
                       mp::AggregateDistances(outs, num_outputs, num_samples_,
                                              mp::WeightingOptions()));
    }
    result[tasks_[t].k][tasks_[t].j] = m;
  }
  return result;
}

}  // namespace

int SensitivityChunkSamples(int64_t kept_bytes_per_sample, int samples,
                            const SensitivityOptions& options) {
  int64_t chunk = std::max(1, options.chunk_samples);
  if (options.cache_budget_bytes > 0 && kept_bytes_per_sample > 0) {
    chunk = std::min(
        chunk, std::max<int64_t>(kMinChunkSamples, options.cache_budget_bytes /
                                                       kept_bytes_per_sample));
  }
  return static_cast<int>(std::min<int64_t>(chunk, std::max(1, samples)));
}

int64_t SensitivityMemoryBytes(int64_t kept_bytes_per_sample, int64_t run_bytes,
                               int64_t fill_bytes, int samples, int threads,
                               const SensitivityOptions& options) {
  constexpr int64_t kCap = int64_t{1} << 50;
  const int64_t kept = std::clamp<int64_t>(kept_bytes_per_sample, 0, kCap);
  const int64_t per = std::clamp<int64_t>(run_bytes, 0, kCap);
  const int64_t chunk =
      SensitivityChunkSamples(kept, std::clamp(samples, 1, 1 << 20), options);
  const int64_t cache = kept > kCap / chunk ? kCap : chunk * kept;
  const int64_t tasks = std::clamp<int64_t>(threads, 1, 1024);
  const int64_t running = std::max(std::min(kCap, per * 2 * tasks),
                                   std::clamp<int64_t>(fill_bytes, 0, kCap));
  return std::min(kCap, cache + running);
}

absl::StatusOr<std::vector<std::vector<double>>> ComputeSensitivities(
    const Model& model, const std::vector<SensitivityNode>& nodes,
    const std::vector<InterestPoint>& points,
    const std::vector<InterestPoint>& outputs,
    const std::vector<SampleFeeds>& samples, const SensitivityOptions& options,
    ThreadPool* pool, const CancellationToken* cancel, ProgressSink* progress) {
  SensitivityRun run(model, nodes, points, outputs, samples, options, pool,
                     cancel, progress);
  return run.Run();
}

}  // namespace quantd
