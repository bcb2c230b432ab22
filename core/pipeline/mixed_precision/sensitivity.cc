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

// The nodes depending on node `start`'s outputs, as a runnable model whose
// inputs are the tensors it takes from outside the cone.
struct Cone {
  std::shared_ptr<Model> model;
  std::vector<std::string> inputs;    // fed from the float cache
  std::vector<std::string> produced;  // every tensor made inside
  // Indices (into the caller's point list) of the points inside the cone.
  std::vector<int> points;
  std::vector<int> outputs;
};

Cone BuildCone(const Model& model, int start,
               const std::vector<InterestPoint>& points,
               const std::vector<InterestPoint>& outputs,
               const std::map<std::string, DType>& dtypes) {
  const Graph& g = model.graph;
  std::set<std::string> produced;
  std::vector<int> nodes;
  for (int i = start; i < static_cast<int>(g.nodes.size()); ++i) {
    bool in_cone = i == start;
    for (const auto& in : g.nodes[i].inputs) {
      if (!in.empty() && produced.count(in)) in_cone = true;
    }
    if (!in_cone) continue;
    nodes.push_back(i);
    for (const auto& out : g.nodes[i].outputs) {
      if (!out.empty()) produced.insert(out);
    }
  }
  Cone cone;
  cone.model = std::make_shared<Model>();
  Model& m = *cone.model;
  m.ir_version = model.ir_version;
  m.opset_import = model.opset_import;
  m.graph.name = g.name;
  m.graph.value_info = g.value_info;
  m.graph.sub_byte_types = g.sub_byte_types;
  std::set<std::string> inputs;
  for (int i : nodes) {
    const Node& n = g.nodes[i];
    m.graph.nodes.push_back(n);
    for (const auto& in : n.inputs) {
      if (in.empty() || produced.count(in)) continue;
      if (const Tensor* t = g.FindInitializer(in)) {
        m.graph.initializers[in] = *t;  // shares the buffer
      } else if (inputs.insert(in).second) {
        ValueInfo v;
        v.name = in;
        auto d = dtypes.find(in);
        v.dtype = d == dtypes.end() ? DType::kFloat : d->second;
        m.graph.inputs.push_back(v);
        cone.inputs.push_back(in);
      }
    }
  }
  for (const auto& out : g.outputs) {
    if (produced.count(out.name)) m.graph.outputs.push_back(out);
  }
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
  cone.produced.assign(produced.begin(), produced.end());
  return cone;
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
  const Graph& g = model.graph;
  const size_t num_samples = samples.size();
  if (num_samples == 0) {
    return absl::InvalidArgumentError("sensitivity: no samples");
  }
  for (const SensitivityNode& n : nodes) {
    if (n.node < 0 || n.node >= static_cast<int>(g.nodes.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensitivity: node index ", n.node, " out of range"));
    }
  }
  const size_t num_points = points.size();
  const size_t num_outputs = outputs.size();
  // Float executor over the whole model; kernels single-threaded because
  // samples (and later tasks) run in parallel.
  auto float_model = std::make_shared<const Model>(model);
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> float_exec,
                   Executor::Create(float_model, ExecutorOptions()));
  std::set<std::string> graph_inputs, graph_outputs;
  for (const auto& in : g.inputs) graph_inputs.insert(in.name);
  for (const auto& out : g.outputs) graph_outputs.insert(out.name);

  // Tasks: (node k, candidate j).
  struct Task {
    int k, j;
  };
  std::vector<Task> tasks;
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (size_t j = 0; j < nodes[k].candidates.size(); ++j) {
      tasks.push_back({static_cast<int>(k), static_cast<int>(j)});
    }
  }
  // dist[t] = [num_points + num_outputs][num_samples], zero outside the cone.
  std::vector<std::vector<double>> dist(
      tasks.size(),
      std::vector<double>((num_points + num_outputs) * num_samples, 0.0));
  std::vector<Cone> cones;
  const int chunk = std::max(1, options.chunk_samples);
  const int64_t total_work =
      static_cast<int64_t>(tasks.size()) *
      static_cast<int64_t>((num_samples + chunk - 1) / chunk);
  std::atomic<int64_t> done{0};

  for (size_t begin = 0; begin < num_samples; begin += chunk) {
    const size_t end = std::min(num_samples, begin + chunk);
    const size_t n_chunk = end - begin;
    // 1. Float runs: every tensor any cone or point needs.
    std::vector<std::map<std::string, Tensor>> cache(n_chunk);
    RunOptions float_run;
    float_run.cancel = cancel;
    for (const Node& n : g.nodes) {
      for (const auto& out : n.outputs) {
        if (!out.empty() && !graph_outputs.count(out)) {
          float_run.extra_outputs.push_back(out);
        }
      }
    }
    RETURN_IF_ERROR(ParallelForSamples(
        static_cast<int64_t>(n_chunk), pool, /*cancel=*/nullptr,
        SampleProgress(), [&](int64_t s) -> absl::Status {
          auto r = float_exec->Run(samples[begin + s], float_run);
          if (!r.ok()) return r.status();
          cache[s] = *std::move(r);
          for (const auto& [name, t] : samples[begin + s]) cache[s][name] = t;
          return absl::OkStatus();
        }));
    if (cones.empty()) {
      std::map<std::string, DType> dtypes;
      for (const auto& [name, t] : cache[0]) dtypes[name] = t.dtype();
      for (const SensitivityNode& n : nodes) {
        cones.push_back(BuildCone(model, n.node, points, outputs, dtypes));
      }
    }
    // 2. One task per (node, candidate): only that node quantized.
    std::vector<absl::Status> task_status(tasks.size());
    auto run_tasks = [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        task_status[t] = [&]() -> absl::Status {
          if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
          const Task& task = tasks[t];
          const SensitivityNode& sn = nodes[task.k];
          const Cone& cone = cones[task.k];
          if (cone.points.empty() && cone.outputs.empty()) {
            return absl::OkStatus();
          }
          const SensitivityCandidate& cand = sn.candidates[task.j];
          const Node& node = g.nodes[sn.node];
          v1::QuantizedGraph qg;
          v1::QuantizedNode* qn = qg.add_nodes();
          qn->set_name(node.name);
          qn->set_op_type(node.op_type);
          for (const auto& w : cand.weights) *qn->add_weights() = w;
          if (cand.activation) *qn->add_activations() = *cand.activation;
          ASSIGN_OR_RETURN(QdqPlan plan, LowerToQdqPlan(*cone.model, qg,
                                                        v1::ExportOptions()));
          ASSIGN_OR_RETURN(Model fq, WithFakeQuantWeights(*cone.model, plan));
          ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec,
                           Executor::Create(std::move(fq), ExecutorOptions()));
          ActivationFakeQuantizer quantizer(plan);
          RunOptions run;
          run.cancel = cancel;
          run.rewriter = &quantizer.rewriter();
          std::set<std::string> cone_outputs;
          for (const auto& o : cone.model->graph.outputs) {
            cone_outputs.insert(o.name);
          }
          for (int p : cone.points) {
            if (!cone_outputs.count(points[p].tensor)) {
              run.extra_outputs.push_back(points[p].tensor);
            }
          }
          std::vector<double>& d = dist[t];
          for (size_t s = 0; s < n_chunk; ++s) {
            std::map<std::string, Tensor> feeds;
            for (const auto& in : cone.inputs) {
              auto it = cache[s].find(in);
              if (it == cache[s].end()) {
                return absl::InternalError(absl::StrCat(
                    "sensitivity: tensor '", in, "' missing from the cache"));
              }
              feeds.emplace(in, it->second);
            }
            ASSIGN_OR_RETURN(auto got, exec->Run(feeds, run));
            const size_t global = begin + s;
            auto measure = [&](const InterestPoint& ip,
                               size_t row) -> absl::Status {
              auto q = got.find(ip.tensor);
              auto f = cache[s].find(ip.tensor);
              if (q == got.end() || f == cache[s].end()) {
                return absl::OkStatus();
              }
              ASSIGN_OR_RETURN(
                  double v, Distance(ip.kind, f->second, q->second, ip.tensor));
              d[row * num_samples + global] = v;
              return absl::OkStatus();
            };
            for (int p : cone.points) RETURN_IF_ERROR(measure(points[p], p));
            for (int o : cone.outputs) {
              RETURN_IF_ERROR(measure(outputs[o], num_points + o));
            }
          }
          return absl::OkStatus();
        }();
        const int64_t dn = ++done;
        if (progress != nullptr && (dn % 8 == 0 || dn == total_work)) {
          progress->Report({"mixed_precision",
                            static_cast<double>(dn) / total_work,
                            absl::StrCat("sensitivity ", dn, "/", total_work)});
        }
      }
    };
    if (pool != nullptr) {
      pool->ParallelFor(static_cast<int64_t>(tasks.size()), 1, run_tasks);
    } else {
      run_tasks(0, static_cast<int64_t>(tasks.size()));
    }
    for (size_t t = 0; t < tasks.size(); ++t) {
      if (!task_status[t].ok()) {
        const Node& node = g.nodes[nodes[tasks[t].k].node];
        return absl::Status(
            task_status[t].code(),
            absl::StrCat("sensitivity of ", node.Label(), " candidate ",
                         tasks[t].j, ": ", task_status[t].message()));
      }
    }
  }
  // 3. Aggregation in a fixed order.
  std::vector<std::vector<double>> result(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    result[k].resize(nodes[k].candidates.size());
  }
  for (size_t t = 0; t < tasks.size(); ++t) {
    const std::vector<double>& d = dist[t];
    absl::Span<const double> pts(d.data(), num_points * num_samples);
    absl::Span<const double> outs(d.data() + num_points * num_samples,
                                  num_outputs * num_samples);
    double m = 0;
    if (num_points > 0) {
      ASSIGN_OR_RETURN(m, mixed_precision::SensitivityMetric(
                              pts, num_points, outs, num_outputs, num_samples,
                              options.weighting));
    } else if (num_outputs > 0) {
      // No interest point: the graph outputs alone (their mean distance).
      ASSIGN_OR_RETURN(m, mixed_precision::AggregateDistances(
                              outs, num_outputs, num_samples,
                              mixed_precision::WeightingOptions()));
    }
    result[tasks[t].k][tasks[t].j] = m;
  }
  return result;
}

}  // namespace quantd
