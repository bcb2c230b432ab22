#include "core/pipeline/evaluation/sensitivity_analysis.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/downstream_cone.h"
#include "core/pipeline/evaluation/evaluation.h"
#include "core/pipeline/evaluation/internal/analysis_run.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace analysis_internal {
namespace {

// True when `f` (float model) is `q` (quantized model) before the job
// changed its constants: same op, same non-constant inputs, and every input
// the job added is a constant (bias correction adds a zero bias).
bool SameDataInputs(const Node& f, const Graph& fg, const Node& q,
                    const Graph& qg) {
  if (f.op_type != q.op_type || f.inputs.size() > q.inputs.size()) {
    return false;
  }
  for (size_t k = 0; k < q.inputs.size(); ++k) {
    const std::string& fin = k < f.inputs.size() ? f.inputs[k] : "";
    const std::string& qin = q.inputs[k];
    const bool q_const = qin.empty() || qg.IsConstant(qin);
    const bool f_const = fin.empty() || fg.IsConstant(fin);
    if (q_const != f_const) return false;
    if (!q_const && fin != qin) return false;
  }
  return true;
}

// `quantized` with every node's constants taken back from `float_model`.
Model FloatForm(const Model& float_model, const Model& quantized) {
  Model out = quantized;
  std::map<std::string, const Node*> by_name;
  for (const Node& n : float_model.graph.nodes) by_name[n.name] = &n;
  for (Node& n : out.graph.nodes) {
    auto it = by_name.find(n.name);
    if (it == by_name.end()) continue;
    const Node& f = *it->second;
    if (!SameDataInputs(f, float_model.graph, n, quantized.graph)) continue;
    for (const auto& in : f.inputs) {
      if (const Tensor* t = float_model.graph.FindInitializer(in)) {
        out.graph.initializers.emplace(in, *t);  // shares the buffer
      }
    }
    n.inputs = f.inputs;
  }
  return out;
}

}  // namespace

void TakeNodeFrom(const Model& other, int index, DownstreamCone* cone) {
  const Node& source = other.graph.nodes[index];
  Graph& g = cone->model->graph;
  g.nodes[0].inputs = source.inputs;
  for (const auto& in : source.inputs) {
    if (const Tensor* t = other.graph.FindInitializer(in)) {
      g.initializers[in] = *t;
    }
  }
}

namespace {

double Noise(const Tensor& f, const Tensor& q) {
  if (f.dtype() != DType::kFloat || q.dtype() != DType::kFloat ||
      f.num_elements() != q.num_elements()) {
    return 0;
  }
  auto a = f.span<float>();
  auto b = q.span<float>();
  double noise = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    noise += d * d;
  }
  return noise;
}

}  // namespace

double Energy(const Tensor& f) {
  if (f.dtype() != DType::kFloat) return 0;
  double s = 0;
  for (float v : f.span<float>()) s += static_cast<double>(v) * v;
  return s;
}

absl::Status AnalysisRun::Prepare() {
  float_form_ = FloatForm(float_model_, quantized_);

  ASSIGN_OR_RETURN(fake_quant_, WithFakeQuantWeights(quantized_, plan_));
  ASSIGN_OR_RETURN(float_exec_, Executor::Create(float_form_));
  ASSIGN_OR_RETURN(fake_exec_, Executor::Create(fake_quant_));
  full_quantizer_ = std::make_unique<ActivationFakeQuantizer>(plan_);
  std::set<std::string> graph_outputs;
  for (const auto& o : quantized_.graph.outputs) graph_outputs.insert(o.name);
  keep_all_.cancel = cancel_;
  std::set<std::string> weight_nodes;
  for (const QdqWeight& w : plan_.weights) weight_nodes.insert(w.node);
  std::map<std::string, int> producer;
  const auto& nodes = quantized_.graph.nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& out : nodes[i].outputs) {
      if (out.empty()) continue;
      producer[out] = static_cast<int>(i);
      if (!graph_outputs.count(out)) keep_all_.extra_outputs.push_back(out);
    }
  }
  std::map<int, Unit> units;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (weight_nodes.count(nodes[i].name)) units[i].node = static_cast<int>(i);
  }
  for (const QdqActivation& a : plan_.activations) {
    auto it = producer.find(a.tensor);
    if (it == producer.end()) continue;  // a graph input
    units[it->second].node = it->second;
    units[it->second].tensors.insert(a.tensor);
  }
  for (auto& [index, unit] : units) units_.push_back(std::move(unit));
  const size_t n = samples_.size();
  signal_.assign(n, 0.0);
  full_noise_.assign(quantized_.graph.outputs.size(),
                     std::vector<double>(n, 0.0));
  noise_.assign(2 * units_.size(), std::vector<double>(n, 0.0));
  total_work_ = static_cast<int64_t>(units_.size() * (2 - first_task_)) *
                static_cast<int64_t>((n + chunk_ - 1) / chunk_);
  if (probes_ > 0) {
    total_work_ = static_cast<int64_t>(n);
    // Before any run: a model without a backward pass fails at once.
    autodiff::GradientOptions options;
    for (const Unit& unit : units_) {
      for (const auto& out : float_form_.graph.nodes[unit.node].outputs) {
        if (!out.empty()) options.tensor_gradients.push_back(out);
      }
    }
    ASSIGN_OR_RETURN(gradients_,
                     autodiff::GradientGraph::Create(
                         std::make_shared<Model>(float_form_), options));
  }
  return absl::OkStatus();
}

// The float form and the fake-quant model on samples [begin, begin + size),
// every tensor kept (feeds included, fake-quantized for the latter).
absl::Status AnalysisRun::RunFull(size_t begin, std::vector<Tensors>* floats,
                                  std::vector<Tensors>* fakes) {
  const auto& outputs = quantized_.graph.outputs;
  RETURN_IF_ERROR(ParallelForSamples(
      static_cast<int64_t>(floats->size()), pool_, cancel_, SampleProgress(),
      [&](int64_t s) -> absl::Status {
        const SampleFeeds& sample = samples_[begin + s];
        ASSIGN_OR_RETURN((*floats)[s], float_exec_->Run(sample, keep_all_));
        for (const auto& [name, t] : sample) (*floats)[s][name] = t;
        if (probes_ > 0) {  // the estimate reads the float run alone
          for (size_t o = 0; o < outputs.size(); ++o) {
            auto f = (*floats)[s].find(outputs[o].name);
            if (f != (*floats)[s].end())
              signal_[begin + s] += Energy(f->second);
          }
          return absl::OkStatus();
        }
        RunOptions fq = keep_all_;
        fq.rewriter = &full_quantizer_->rewriter();
        const SampleFeeds fq_feeds = full_quantizer_->FakeQuantizeFeeds(sample);
        ASSIGN_OR_RETURN((*fakes)[s], fake_exec_->Run(fq_feeds, fq));
        for (const auto& [name, t] : fq_feeds) (*fakes)[s][name] = t;
        for (size_t o = 0; o < outputs.size(); ++o) {
          auto f = (*floats)[s].find(outputs[o].name);
          auto q = (*fakes)[s].find(outputs[o].name);
          if (f == (*floats)[s].end() || q == (*fakes)[s].end()) continue;
          signal_[begin + s] += Energy(f->second);
          full_noise_[o][begin + s] = Noise(f->second, q->second);
        }
        return absl::OkStatus();
      }));
  if (dtypes_.empty() && !floats->empty()) {
    for (const auto& [name, t] : (*floats)[0]) dtypes_[name] = t.dtype();
  }
  return absl::OkStatus();
}

// Task 2u: only unit u quantized (its cone in the float form, fed from the
// float cache); task 2u+1: only unit u float (its cone in the fake-quant
// model, fed from the fake-quant cache). A run stops once the unit's change
// is absorbed (ConeDivergence): its outputs are then the cache's, and so is
// every output the run leaves as the cache has it (the float output's noise
// 0, the fake-quant output's noise the full model's).
absl::Status AnalysisRun::RunTask(size_t t, size_t begin,
                                  const std::vector<Tensors>& floats,
                                  const std::vector<Tensors>& fakes) {
  const Unit& unit = units_[t / 2];
  const bool only_quantized = t % 2 == 0;
  const Model& base = only_quantized ? float_form_ : fake_quant_;
  DownstreamCone cone = BuildDownstreamCone(base, unit.node, dtypes_);
  TakeNodeFrom(only_quantized ? fake_quant_ : float_form_, unit.node, &cone);
  QdqPlan activations;
  for (const QdqActivation& a : plan_.activations) {
    if (unit.tensors.count(a.tensor) == (only_quantized ? 1u : 0u)) {
      activations.activations.push_back(a);
    }
  }
  const ActivationFakeQuantizer quantizer(activations);
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec,
                   Executor::Create(std::shared_ptr<const Model>(cone.model)));
  const ConeDivergence divergence(cone);
  const auto& outputs = quantized_.graph.outputs;
  for (size_t s = 0; s < floats.size(); ++s) {
    const Tensors& cache = only_quantized ? floats[s] : fakes[s];
    ASSIGN_OR_RETURN(Tensors feeds, DownstreamConeFeeds(cone, cache));
    // The run's own token: cancelled when the run has converged, or when
    // the job's is (polled after every node).
    CancellationToken stop;
    ConeDivergence::Tracker tracker(divergence, cache,
                                    [&stop] { stop.Cancel(); });
    const TensorObserver observer = [&](const Node& node, int output,
                                        const Tensor& value) {
      tracker.observer()(node, output, value);
      if (cancel_ != nullptr) {
        absl::Status job = cancel_->Check();
        if (!job.ok()) stop.Cancel(job);
      }
    };
    RunOptions run;
    run.cancel = &stop;
    run.rewriter = &quantizer.rewriter();
    run.observer = &observer;
    absl::StatusOr<Tensors> got = exec->Run(feeds, run);
    if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
    if (!got.ok() && !tracker.converged()) return got.status();
    double noise = 0;
    for (size_t o = 0; o < outputs.size(); ++o) {
      const std::string& name = outputs[o].name;
      if (!tracker.Differs(name)) {
        if (!only_quantized) noise += full_noise_[o][begin + s];
        continue;
      }
      auto f = floats[s].find(name);
      auto q = got->find(name);
      if (f != floats[s].end() && q != got->end()) {
        noise += Noise(f->second, q->second);
      }
    }
    noise_[t][begin + s] = noise;
  }
  return absl::OkStatus();
}

void AnalysisRun::CountDone() {
  const int64_t done = ++done_;
  if (progress_ != nullptr && (done % 8 == 0 || done == total_work_)) {
    progress_->Report({stage::kAnalyze, static_cast<double>(done) / total_work_,
                       absl::StrCat("sensitivity ", done, "/", total_work_)});
  }
}

absl::StatusOr<std::vector<LayerSensitivity>> AnalysisRun::Run() {
  RETURN_IF_ERROR(Prepare());
  const size_t n = samples_.size();
  if (n == 0 || units_.empty()) return std::vector<LayerSensitivity>();
  const auto& nodes = quantized_.graph.nodes;
  for (size_t begin = 0; begin < n; begin += chunk_) {
    const size_t size = std::min<size_t>(chunk_, n - begin);
    std::vector<Tensors> floats(size), fakes(size);
    RETURN_IF_ERROR(RunFull(begin, &floats, &fakes));
    if (probes_ > 0) {
      // After the first run: the cones' inputs take its dtypes.
      if (unit_nodes_.empty()) RETURN_IF_ERROR(PrepareEstimate());
      for (size_t s = 0; s < size; ++s) {
        RETURN_IF_ERROR(EstimateSample(begin + s, floats[s]));
        CountDone();
      }
      continue;
    }
    // One node's two tasks per item: the token is checked per node.
    RETURN_IF_ERROR(ParallelForSamples(
        static_cast<int64_t>(units_.size()), pool_, cancel_, SampleProgress(),
        [&](int64_t u) -> absl::Status {
          for (size_t t = 2 * u + first_task_; t < 2 * u + 2; ++t) {
            absl::Status st = RunTask(t, begin, floats, fakes);
            if (!st.ok()) {
              return absl::Status(
                  st.code(), absl::StrCat("sensitivity analysis of ",
                                          nodes[units_[u].node].Label(), ": ",
                                          st.message()));
            }
            CountDone();
          }
          return absl::OkStatus();
        }));
  }
  double signal = 0;
  for (double s : signal_) signal += s;
  std::vector<LayerSensitivity> out;
  for (size_t u = 0; u < units_.size(); ++u) {
    double only_q = 0, only_f = 0;
    for (size_t s = 0; s < n; ++s) {
      if (probes_ > 0) {
        only_q += estimate_[u][s];
      } else {
        only_q += noise_[2 * u][s];
        only_f += noise_[2 * u + 1][s];
      }
    }
    LayerSensitivity row;
    row.node = nodes[units_[u].node].name;
    row.estimated = probes_ > 0;
    row.sqnr_only_quantized_db = first_task_ == 0
                                     ? SqnrDb(signal, only_q)
                                     : std::numeric_limits<double>::quiet_NaN();
    // The estimate has no only-float figure: the units' first-order noises
    // do not add up to the whole model's (docs/analysis.md, *The
    // estimate*).
    row.sqnr_only_float_db = probes_ > 0
                                 ? std::numeric_limits<double>::quiet_NaN()
                                 : SqnrDb(signal, only_f);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace analysis_internal

int AnalysisChunkSamples(int64_t activation_bytes) {
  constexpr int kMostSamples = SensitivityAnalysisOptions().chunk_samples;
  if (activation_bytes <= 0) return kMostSamples;
  // Two caches (float and fake-quant) of every activation per sample.
  const int64_t fit = kAnalysisCacheBudgetBytes / (2 * activation_bytes);
  return static_cast<int>(std::clamp<int64_t>(fit, 1, kMostSamples));
}

absl::StatusOr<std::vector<LayerSensitivity>> AnalyzeLayerSensitivity(
    const Model& float_model, const Model& quantized_model, const QdqPlan& plan,
    const std::vector<SampleFeeds>& samples,
    const SensitivityAnalysisOptions& options, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  analysis_internal::AnalysisRun run(float_model, quantized_model, plan,
                                     samples, options, 0, pool, cancel,
                                     progress);
  return run.Run();
}

void FillLayerSensitivity(const std::vector<LayerSensitivity>& sensitivity,
                          std::vector<LayerReport>* layers) {
  std::map<std::string, const LayerSensitivity*> by_node;
  for (const LayerSensitivity& s : sensitivity) by_node[s.node] = &s;
  for (LayerReport& l : *layers) {
    auto it = by_node.find(l.node);
    if (it == by_node.end()) continue;
    l.sqnr_only_quantized_db = it->second->sqnr_only_quantized_db;
    const double only_float = it->second->sqnr_only_float_db;
    if (!std::isnan(only_float)) l.sqnr_only_float_db = only_float;
    l.sensitivity_estimated = it->second->estimated;
  }
}

}  // namespace quantd
