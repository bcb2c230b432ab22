#include "core/hessian/hutchinson.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace quantd::hessian {
namespace {

// sum over every axis but `axis` of g^2.
std::vector<double> SquaredPerChannel(const Tensor& g, int axis) {
  const int64_t channels = g.dim(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < g.rank(); ++d) inner *= g.dim(d);
  const int64_t outer = g.num_elements() / (channels * inner);
  std::vector<double> out(channels, 0.0);
  const float* p = g.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* q = p + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) out[c] += double{q[i]} * q[i];
    }
  }
  return out;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

// h_j folded into the running mean of iterations [0, j].
void UpdateMean(const Tensor& g, const KernelTarget& k, Granularity granularity,
                int j, std::vector<double>* mean) {
  if (granularity == Granularity::kPerOutputChannel) {
    const std::vector<double> h = SquaredPerChannel(g, k.output_channel_axis);
    for (size_t c = 0; c < h.size(); ++c) {
      (*mean)[c] = (j * (*mean)[c] + h[c]) / (j + 1);
    }
    return;
  }
  const float* p = g.data<float>();
  for (size_t i = 0; i < mean->size(); ++i) {
    (*mean)[i] = (j * (*mean)[i] + double{p[i]} * p[i]) / (j + 1);
  }
}

absl::Status CheckTargets(const autodiff::GradientGraph& graph,
                          const std::vector<KernelTarget>& targets,
                          Granularity granularity,
                          std::vector<std::vector<double>>* mean) {
  for (const KernelTarget& k : targets) {
    const Tensor* w = graph.model().graph.FindInitializer(k.initializer);
    if (w == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Hessian scores: '", k.initializer, "' is not an initializer"));
    }
    int64_t size = w->num_elements();
    if (granularity == Granularity::kPerOutputChannel) {
      if (k.output_channel_axis < 0 || k.output_channel_axis >= w->rank()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Hessian scores: weight '", k.initializer,
            "': output channel axis ", k.output_channel_axis, " out of range"));
      }
      size = w->dim(k.output_channel_axis);
    }
    mean->emplace_back(size, 0.0);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> HessianOutputs(
    const autodiff::GradientGraph& graph, const autodiff::Tape& tape) {
  std::vector<std::string> outputs;
  for (const ValueInfo& o : graph.model().graph.outputs) {
    auto it = tape.values.find(o.name);
    if (it != tape.values.end() && it->second.dtype() == DType::kFloat &&
        graph.IsDifferentiable(o.name)) {
      outputs.push_back(o.name);
    }
  }
  if (outputs.empty()) {
    return absl::FailedPreconditionError(
        "Hessian scores: no float graph output depends on the kernels");
  }
  return outputs;
}

absl::StatusOr<std::vector<std::vector<double>>> EstimateForSample(
    const autodiff::GradientGraph& graph,
    const std::map<std::string, Tensor>& feeds,
    const std::vector<KernelTarget>& targets, const HutchinsonOptions& options,
    uint64_t seed, const CancellationToken* cancel, int* iterations) {
  std::vector<std::vector<double>> mean;
  RETURN_IF_ERROR(CheckTargets(graph, targets, options.granularity, &mean));
  ASSIGN_OR_RETURN(autodiff::Tape tape, graph.Forward(feeds, cancel));
  ASSIGN_OR_RETURN(std::vector<std::string> outputs,
                   HessianOutputs(graph, tape));
  std::mt19937_64 rng(seed);
  autodiff::Scratch scratch;  // the kernels' temporaries, for every pass
  std::vector<double> previous;
  for (int j = 0; j < options.max_iterations; ++j) {
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    if (iterations != nullptr) *iterations = j + 1;
    std::map<std::string, Tensor> seeds;
    for (const std::string& name : outputs) {
      const Tensor& out = tape.values.at(name);
      Tensor v(DType::kFloat, out.shape());
      // f_v = mean over the batch of sum(v * output) (MCT).
      const float scale =
          out.rank() > 0 && out.dim(0) > 0 ? 1.f / out.dim(0) : 1.f;
      for (float& x : v.mutable_span<float>()) {
        x = (rng() & 1) != 0 ? scale : -scale;
      }
      seeds.emplace(name, std::move(v));
    }
    ASSIGN_OR_RETURN(autodiff::Gradients g,
                     graph.Backward(tape, seeds, cancel, &scratch));
    std::vector<double> now;
    for (size_t s = 0; s < targets.size(); ++s) {
      UpdateMean(g.initializers.at(targets[s].initializer), targets[s],
                 options.granularity, j, &mean[s]);
      now.push_back(Mean(mean[s]));
    }
    if (j > options.min_iterations && !previous.empty()) {
      double worst = 0;
      for (size_t s = 0; s < now.size(); ++s) {
        worst = std::max(worst, std::fabs(now[s] - previous[s]) /
                                    (std::fabs(now[s]) + 1e-6));
      }
      if (worst < options.tolerance) break;
    }
    previous = std::move(now);
  }
  return mean;
}

}  // namespace quantd::hessian
