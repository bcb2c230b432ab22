#include "core/pipeline/mixed_precision/sensitivity.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/mixed_precision/sensitivity_metric.h"
#include "core/pipeline/evaluation/downstream_cone.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

bool IsInterestOp(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Conv",    "ConvTranspose", "Gemm", "MatMul",
      "Sigmoid", "Softmax",       "Add",  "Concat"};
  return kOps.count(op) > 0;
}

DistanceKind KindFor(const std::string& op) {
  if (op == "Softmax") return DistanceKind::kKl;
  if (op == "Sigmoid" || op == "Gemm" || op == "MatMul") {
    return DistanceKind::kCosine;
  }
  return DistanceKind::kNormalizedMse;
}

absl::StatusOr<double> Distance(DistanceKind kind, const Tensor& f,
                                const Tensor& q, const std::string& tensor) {
  if (f.dtype() != DType::kFloat || q.dtype() != DType::kFloat) return 0.0;
  if (f.num_elements() != q.num_elements()) {
    return absl::InternalError(absl::StrCat("sensitivity: tensor '", tensor,
                                            "' changed size under "
                                            "quantization"));
  }
  auto fs = f.span<float>();
  auto qs = q.span<float>();
  switch (kind) {
    case DistanceKind::kKl: {
      // Clipping both sides to 1e-8 can leave sum p log(p/q) a rounding
      // error below 0 when q is p.
      ASSIGN_OR_RETURN(double kl, mixed_precision::KlDivergence(fs, qs));
      return std::max(0.0, kl);
    }
    case DistanceKind::kCosine:
      return mixed_precision::CosineDistance(fs, qs);
    default:
      return mixed_precision::NormalizedMse(fs, qs);
  }
}

// The downstream cone of a node and the points (indices into the caller's
// lists) it produces.
struct Cone {
  DownstreamCone cone;
  std::vector<int> points;
  std::vector<int> outputs;
};

Cone BuildCone(const Model& model, int start,
               const std::vector<InterestPoint>& points,
               const std::vector<InterestPoint>& outputs,
               const std::map<std::string, DType>& dtypes) {
  Cone cone;
  cone.cone = BuildDownstreamCone(model, start, dtypes);
  const std::set<std::string>& produced = cone.cone.produced;
  for (size_t p = 0; p < points.size(); ++p) {
    if (produced.count(points[p].tensor)) {
      cone.points.push_back(static_cast<int>(p));
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (produced.count(outputs[o].tensor)) {
      cone.outputs.push_back(static_cast<int>(o));
    }
  }
  return cone;
}

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

// The points of `cone` that are not already outputs of its model.
std::vector<std::string> ExtraPointOutputs(
    const Cone& cone, const std::vector<InterestPoint>& points) {
  std::set<std::string> cone_outputs;
  for (const auto& o : cone.cone.model->graph.outputs) {
    cone_outputs.insert(o.name);
  }
  std::vector<std::string> extra;
  for (int p : cone.points) {
    if (!cone_outputs.count(points[p].tensor)) {
      extra.push_back(points[p].tensor);
    }
  }
  return extra;
}

// Every tensor of one sample's float run, plus its feeds.
using FloatTensors = std::map<std::string, Tensor>;

// The cone's inputs, taken from the float run of one sample.
absl::StatusOr<FloatTensors> ConeFeeds(const Cone& cone,
                                       const FloatTensors& floats) {
  auto feeds = DownstreamConeFeeds(cone.cone, floats);
  if (!feeds.ok()) {
    return absl::Status(
        feeds.status().code(),
        absl::StrCat("sensitivity: ", feeds.status().message()));
  }
  return feeds;
}

// One sensitivity evaluation: node k at its candidate j.
struct Task {
  int k, j;
};

// ComputeSensitivities' state. Samples go in chunks: a float run of the
// chunk (every tensor kept), then every task on the chunk, each writing its
// distances; the aggregation at the end runs in a fixed order.
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
        points_(points),
        outputs_(outputs),
        samples_(samples),
        options_(options),
        pool_(pool),
        cancel_(cancel),
        progress_(progress),
        num_samples_(samples.size()),
        num_points_(points.size()),
        num_outputs_(outputs.size()),
        chunk_(std::max(1, options.chunk_samples)) {}

  absl::StatusOr<std::vector<std::vector<double>>> Run();

 private:
  absl::Status Validate() const;
  absl::Status Prepare();
  absl::Status RunFloat(size_t begin, std::vector<FloatTensors>* cache) const;
  void BuildCones(const FloatTensors& sample);
  absl::Status RunTasks(size_t begin, const std::vector<FloatTensors>& cache);
  absl::Status MeasureTask(const Task& task, size_t begin,
                           const std::vector<FloatTensors>& cache,
                           std::vector<double>* d) const;
  absl::Status RecordDistances(const Cone& cone, const FloatTensors& got,
                               const FloatTensors& floats, size_t global,
                               std::vector<double>* d) const;
  void CountDone();
  absl::StatusOr<std::vector<std::vector<double>>> Aggregate() const;

  const Model& model_;
  const Graph& g_;
  const std::vector<SensitivityNode>& nodes_;
  const std::vector<InterestPoint>& points_;
  const std::vector<InterestPoint>& outputs_;
  const std::vector<SampleFeeds>& samples_;
  const SensitivityOptions& options_;
  ThreadPool* pool_;
  const CancellationToken* cancel_;
  ProgressSink* progress_;
  const size_t num_samples_, num_points_, num_outputs_;
  const int chunk_;

  std::unique_ptr<Executor> float_exec_;
  RunOptions float_run_;
  std::vector<Task> tasks_;
  // dist_[t] = [num_points + num_outputs][num_samples], zero outside the cone.
  std::vector<std::vector<double>> dist_;
  std::vector<Cone> cones_;
  int64_t total_work_ = 0;
  std::atomic<int64_t> done_{0};
};

absl::StatusOr<std::vector<std::vector<double>>> SensitivityRun::Run() {
  RETURN_IF_ERROR(Validate());
  RETURN_IF_ERROR(Prepare());
  for (size_t begin = 0; begin < num_samples_; begin += chunk_) {
    const size_t end = std::min(num_samples_, begin + chunk_);
    std::vector<FloatTensors> cache(end - begin);
    RETURN_IF_ERROR(RunFloat(begin, &cache));
    if (cones_.empty()) BuildCones(cache[0]);
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

absl::Status SensitivityRun::Prepare() {
  // Float executor over the whole model; kernels single-threaded because
  // samples (and later tasks) run in parallel.
  auto float_model = std::make_shared<const Model>(model_);
  ASSIGN_OR_RETURN(float_exec_,
                   Executor::Create(float_model, ExecutorOptions()));
  // The float runs keep every tensor any cone or point needs.
  std::set<std::string> graph_outputs;
  for (const auto& out : g_.outputs) graph_outputs.insert(out.name);
  float_run_.cancel = cancel_;
  for (const Node& n : g_.nodes) {
    for (const auto& out : n.outputs) {
      if (!out.empty() && !graph_outputs.count(out)) {
        float_run_.extra_outputs.push_back(out);
      }
    }
  }
  for (size_t k = 0; k < nodes_.size(); ++k) {
    for (size_t j = 0; j < nodes_[k].candidates.size(); ++j) {
      tasks_.push_back({static_cast<int>(k), static_cast<int>(j)});
    }
  }
  dist_.assign(
      tasks_.size(),
      std::vector<double>((num_points_ + num_outputs_) * num_samples_, 0.0));
  total_work_ = static_cast<int64_t>(tasks_.size()) *
                static_cast<int64_t>((num_samples_ + chunk_ - 1) / chunk_);
  return absl::OkStatus();
}

absl::Status SensitivityRun::RunFloat(size_t begin,
                                      std::vector<FloatTensors>* cache) const {
  return ParallelForSamples(
      static_cast<int64_t>(cache->size()), pool_, cancel_, SampleProgress(),
      [&](int64_t s) -> absl::Status {
        auto r = float_exec_->Run(samples_[begin + s], float_run_);
        if (!r.ok()) return r.status();
        (*cache)[s] = *std::move(r);
        for (const auto& [name, t] : samples_[begin + s]) {
          (*cache)[s][name] = t;
        }
        return absl::OkStatus();
      });
}

void SensitivityRun::BuildCones(const FloatTensors& sample) {
  std::map<std::string, DType> dtypes;
  for (const auto& [name, t] : sample) dtypes[name] = t.dtype();
  for (const SensitivityNode& n : nodes_) {
    cones_.push_back(BuildCone(model_, n.node, points_, outputs_, dtypes));
  }
}

absl::Status SensitivityRun::RunTasks(size_t begin,
                                      const std::vector<FloatTensors>& cache) {
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

// Only the task's node quantized, with its candidate: the cone runs on the
// chunk's float inputs and its points are compared with the float ones.
absl::Status SensitivityRun::MeasureTask(const Task& task, size_t begin,
                                         const std::vector<FloatTensors>& cache,
                                         std::vector<double>* d) const {
  if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
  const SensitivityNode& sn = nodes_[task.k];
  const Cone& cone = cones_[task.k];
  if (cone.points.empty() && cone.outputs.empty()) return absl::OkStatus();
  const ModelQuantization quantization =
      SingleNodeQuantization(g_.nodes[sn.node], sn.candidates[task.j]);
  ASSIGN_OR_RETURN(QdqPlan plan,
                   LowerToQdqPlan(cone.cone.model->graph, quantization,
                                  v1::ExportOptions()));
  ASSIGN_OR_RETURN(Model fq, WithFakeQuantWeights(*cone.cone.model, plan));
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec,
                   Executor::Create(std::move(fq), ExecutorOptions()));
  ActivationFakeQuantizer quantizer(plan);
  RunOptions run;
  run.cancel = cancel_;
  run.rewriter = &quantizer.rewriter();
  run.extra_outputs = ExtraPointOutputs(cone, points_);
  for (size_t s = 0; s < cache.size(); ++s) {
    ASSIGN_OR_RETURN(FloatTensors feeds, ConeFeeds(cone, cache[s]));
    ASSIGN_OR_RETURN(FloatTensors got, exec->Run(feeds, run));
    RETURN_IF_ERROR(RecordDistances(cone, got, cache[s], begin + s, d));
  }
  return absl::OkStatus();
}

absl::Status SensitivityRun::RecordDistances(const Cone& cone,
                                             const FloatTensors& got,
                                             const FloatTensors& floats,
                                             size_t global,
                                             std::vector<double>* d) const {
  auto measure = [&](const InterestPoint& ip, size_t row) -> absl::Status {
    auto q = got.find(ip.tensor);
    auto f = floats.find(ip.tensor);
    if (q == got.end() || f == floats.end()) return absl::OkStatus();
    ASSIGN_OR_RETURN(double v,
                     Distance(ip.kind, f->second, q->second, ip.tensor));
    (*d)[row * num_samples_ + global] = v;
    return absl::OkStatus();
  };
  for (int p : cone.points) RETURN_IF_ERROR(measure(points_[p], p));
  for (int o : cone.outputs) {
    RETURN_IF_ERROR(measure(outputs_[o], num_points_ + o));
  }
  return absl::OkStatus();
}

void SensitivityRun::CountDone() {
  const int64_t dn = ++done_;
  if (progress_ != nullptr && (dn % 8 == 0 || dn == total_work_)) {
    progress_->Report({"mixed_precision", static_cast<double>(dn) / total_work_,
                       absl::StrCat("sensitivity ", dn, "/", total_work_)});
  }
}

// Per task, MCT's metric over the points and outputs, in task order.
absl::StatusOr<std::vector<std::vector<double>>> SensitivityRun::Aggregate()
    const {
  std::vector<std::vector<double>> result(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    result[k].resize(nodes_[k].candidates.size());
  }
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const std::vector<double>& d = dist_[t];
    absl::Span<const double> pts(d.data(), num_points_ * num_samples_);
    absl::Span<const double> outs(d.data() + num_points_ * num_samples_,
                                  num_outputs_ * num_samples_);
    double m = 0;
    if (num_points_ > 0) {
      ASSIGN_OR_RETURN(m, mixed_precision::SensitivityMetric(
                              pts, num_points_, outs, num_outputs_,
                              num_samples_, options_.weighting));
    } else if (num_outputs_ > 0) {
      // No interest point: the graph outputs alone (their mean distance).
      ASSIGN_OR_RETURN(m, mixed_precision::AggregateDistances(
                              outs, num_outputs_, num_samples_,
                              mixed_precision::WeightingOptions()));
    }
    result[tasks_[t].k][tasks_[t].j] = m;
  }
  return result;
}

}  // namespace

std::vector<InterestPoint> MpInterestPoints(const Model& model,
                                            const std::vector<NodePlan>& plans,
                                            double factor) {
  const Graph& g = model.graph;
  std::vector<InterestPoint> all;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.outputs.empty() || !IsInterestOp(n.op_type)) continue;
    if (i < plans.size() && plans[i].fused_inner) continue;
    all.push_back({n.outputs[0], KindFor(n.op_type)});
  }
  if (!(factor < 1.0) || all.empty()) return all;
  // Evenly thinned, as MCT's num_interest_points_factor.
  const size_t keep = std::max<size_t>(
      1,
      static_cast<size_t>(std::ceil(factor * static_cast<double>(all.size()))));
  std::vector<InterestPoint> out;
  for (size_t k = 0; k < keep; ++k) {
    out.push_back(all[k * all.size() / keep]);
  }
  return out;
}

std::vector<InterestPoint> MpOutputPoints(const Model& model) {
  const Graph& g = model.graph;
  std::map<std::string, std::string> producer;
  for (const Node& n : g.nodes) {
    for (const auto& o : n.outputs) producer[o] = n.op_type;
  }
  std::vector<InterestPoint> out;
  for (const auto& o : g.outputs) {
    auto it = producer.find(o.name);
    out.push_back({o.name, it == producer.end() ? DistanceKind::kNormalizedMse
                                                : KindFor(it->second)});
  }
  return out;
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
