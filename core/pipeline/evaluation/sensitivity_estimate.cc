// The first-order estimate of the per-layer analysis
// (EstimateLayerSensitivity, docs/analysis.md, *The estimate*).
#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/autodiff/gradient_graph.h"
#include "core/pipeline/evaluation/internal/analysis_run.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace analysis_internal {
namespace {

// sum a[i] * b[i]: Eigen's float dot over blocks of 4,096 elements, the
// blocks summed in double (an estimate's product: the order is fixed, and
// float blocks keep it vectorized).
double BlockedDot(const float* a, const float* b, int64_t n) {
  constexpr int64_t kBlock = 4096;
  double sum = 0;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    sum += Eigen::Map<const Eigen::VectorXf>(a + i, m).dot(
        Eigen::Map<const Eigen::VectorXf>(b + i, m));
  }
  return sum;
}

}  // namespace

// The estimate's pieces: per unit its node alone (a cone cut at the node's
// outputs) with the node's quantization, and the float form's gradient
// graph returning the gradients at every unit's outputs.
absl::Status AnalysisRun::PrepareEstimate() {
  unit_nodes_.resize(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) {
    const Unit& unit = units_[u];
    UnitNode& un = unit_nodes_[u];
    const Node& node = float_form_.graph.nodes[unit.node];
    std::set<std::string> points;
    for (const auto& out : node.outputs) {
      if (out.empty()) continue;
      points.insert(out);
      output_of_[out] = {u, un.outputs.size()};
      un.outputs.push_back(out);
    }
    un.cone = BuildDownstreamCone(float_form_, unit.node, dtypes_, points, 1);
    TakeNodeFrom(fake_quant_, unit.node, &un.cone);
    QdqPlan activations;
    for (const QdqActivation& a : plan_.activations) {
      if (unit.tensors.count(a.tensor)) activations.activations.push_back(a);
    }
    un.quantizer = std::make_unique<ActivationFakeQuantizer>(activations);
    ASSIGN_OR_RETURN(
        un.exec, Executor::Create(std::shared_ptr<const Model>(un.cone.model)));
  }
  estimate_.assign(units_.size(), std::vector<double>(samples_.size(), 0.0));
  return absl::OkStatus();
}

// What quantizing unit `u` alone changes at its outputs on one sample: its
// node run from the float cache with its quantization, minus the cache.
absl::StatusOr<std::vector<Tensor>> AnalysisRun::UnitChange(
    size_t u, const Tensors& floats) const {
  const UnitNode& un = unit_nodes_[u];
  ASSIGN_OR_RETURN(Tensors feeds, DownstreamConeFeeds(un.cone, floats));
  RunOptions run;
  run.cancel = cancel_;
  run.rewriter = &un.quantizer->rewriter();
  run.extra_outputs = un.outputs;
  ASSIGN_OR_RETURN(Tensors got, un.exec->Run(feeds, run));
  std::vector<Tensor> change;
  for (const std::string& name : un.outputs) {
    auto q = got.find(name);
    auto f = floats.find(name);
    if (q == got.end() || f == floats.end() ||
        q->second.dtype() != DType::kFloat ||
        f->second.dtype() != DType::kFloat ||
        q->second.num_elements() != f->second.num_elements()) {
      change.emplace_back();
      continue;
    }
    Tensor d(DType::kFloat, f->second.shape());
    auto fv = f->second.span<float>();
    auto qv = q->second.span<float>();
    float* dv = d.mutable_data<float>();
    for (size_t i = 0; i < fv.size(); ++i) dv[i] = qv[i] - fv[i];
    change.push_back(std::move(d));
  }
  return change;
}

// One sample's estimate of every unit's only-quantized output noise: with
// J the float model's Jacobian at the unit's outputs and d the unit's
// change there, the first-order output noise is |J d|^2 = E_v[(v . J d)^2]
// over Rademacher v on the graph outputs, and v . J d = (J^T v) . d, where
// one backward pass gives J^T v at every unit at once.
absl::Status AnalysisRun::EstimateSample(size_t global, const Tensors& floats) {
  std::vector<std::vector<Tensor>> change(units_.size());
  RETURN_IF_ERROR(
      ParallelForSamples(static_cast<int64_t>(units_.size()), pool_, cancel_,
                         SampleProgress(), [&](int64_t u) -> absl::Status {
                           ASSIGN_OR_RETURN(change[u], UnitChange(u, floats));
                           return absl::OkStatus();
                         }));
  autodiff::Tape tape{floats};
  const auto& outputs = float_form_.graph.outputs;
  std::vector<std::vector<double>> dots(probes_,
                                        std::vector<double>(units_.size()));
  RETURN_IF_ERROR(ParallelForSamples(
      probes_, pool_, cancel_, SampleProgress(),
      [&](int64_t k) -> absl::Status {
        std::map<std::string, Tensor> seeds;
        std::mt19937_64 rng(global * 1000003 + k);
        for (const auto& o : outputs) {
          auto f = floats.find(o.name);
          if (f == floats.end() || f->second.dtype() != DType::kFloat ||
              !gradients_->IsDifferentiable(o.name)) {
            continue;
          }
          Tensor v(DType::kFloat, f->second.shape());
          for (float& x : v.mutable_span<float>()) {
            x = (rng() & 1) ? 1.0f : -1.0f;
          }
          seeds[o.name] = std::move(v);
        }
        if (seeds.empty()) return absl::OkStatus();
        // Each gradient is dotted with the change as the pass completes it.
        const autodiff::GradientObserver take = [&](const std::string& name,
                                                    const Tensor& grad) {
          auto at = output_of_.find(name);
          if (at == output_of_.end()) return;
          const auto [u, j] = at->second;
          const Tensor& d = change[u][j];
          if (!d.defined() || grad.num_elements() != d.num_elements()) {
            return;
          }
          dots[k][u] +=
              BlockedDot(grad.data<float>(), d.data<float>(), d.num_elements());
        };
        return gradients_->Backward(tape, seeds, cancel_, nullptr, &take)
            .status();
      }));
  for (size_t u = 0; u < units_.size(); ++u) {
    double sum = 0;
    for (int k = 0; k < probes_; ++k) sum += dots[k][u] * dots[k][u];
    estimate_[u][global] = sum / probes_;
  }
  return absl::OkStatus();
}

}  // namespace analysis_internal

absl::StatusOr<std::vector<LayerSensitivity>> EstimateLayerSensitivity(
    const Model& float_model, const Model& quantized_model, const QdqPlan& plan,
    const std::vector<SampleFeeds>& samples,
    const SensitivityAnalysisOptions& options, int probes, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  if (probes < 1) {
    return absl::InvalidArgumentError("sensitivity estimate: probes < 1");
  }
  analysis_internal::AnalysisRun run(float_model, quantized_model, plan,
                                     samples, options, probes, pool, cancel,
                                     progress);
  return run.Run();
}

absl::Status SensitivityEstimateApplies(const Model& float_model) {
  return autodiff::GradientGraph::CheckPath(float_model);
}

SensitivityMethod ResolveSensitivityMethod(SensitivityMethod method,
                                           const Model& float_model) {
  if (method != SensitivityMethod::kAuto) return method;
  return SensitivityEstimateApplies(float_model).ok()
             ? SensitivityMethod::kEstimate
             : SensitivityMethod::kExact;
}

}  // namespace quantd
