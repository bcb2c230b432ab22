#include "core/pipeline/evaluation/evaluation.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/evaluation/paired_models.h"
#include "core/pipeline/evaluation/squared_error_sums.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

using Sums = SquaredErrorSums;

struct OutputSums {
  Sums sums;
  double cosine_sum = 0;
  int64_t cosine_count = 0;
  int64_t top1_match = 0, top1_total = 0;
};

struct SampleResult {
  std::map<std::string, Sums> tensors;
  std::map<std::string, OutputSums> outputs;
};

void CompareOutput(const Tensor& f, const Tensor& q, OutputSums* o) {
  Sums s = CompareTensors(f, q);
  o->sums.signal += s.signal;
  o->sums.noise += s.noise;
  if (f.dtype() != DType::kFloat || q.dtype() != DType::kFloat ||
      f.num_elements() != q.num_elements() || f.num_elements() == 0) {
    return;
  }
  auto a = f.span<float>();
  auto b = q.span<float>();
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  if (na > 0 && nb > 0) {
    o->cosine_sum += dot / std::sqrt(na * nb);
    o->cosine_count++;
  } else if (na == 0 && nb == 0) {
    o->cosine_sum += 1;
    o->cosine_count++;
  }
  if (f.rank() == 2 && f.dim(1) >= 2) {
    const int64_t rows = f.dim(0), cols = f.dim(1);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t fa = 0, qa = 0;
      for (int64_t c = 1; c < cols; ++c) {
        if (a[r * cols + c] > a[r * cols + fa]) fa = c;
        if (b[r * cols + c] > b[r * cols + qa]) qa = c;
      }
      o->top1_match += fa == qa;
      o->top1_total++;
    }
  }
}

// Tensor and output sums of one sample: the fake-quant model's run,
// against float values kept from calibration, or from the float model run
// beside it (as one graph where PairedModels can, else first).
class SampleEvaluator {
 public:
  SampleEvaluator(const Executor& float_model, const Executor& fake_quant_model,
                  const ActivationFakeQuantizer& quantizer,
                  const std::set<std::string>& tensors,
                  const PairedModels* paired, const CancellationToken* cancel)
      : float_model_(float_model),
        fake_quant_model_(fake_quant_model),
        quantizer_(quantizer),
        tensors_(tensors),
        paired_(paired),
        cancel_(cancel) {}

  absl::Status Evaluate(int64_t i, const SampleFeeds& sample,
                        std::optional<KeptFloatValues> kept,
                        SampleResult* r) const {
    // Float values waiting for their fake-quant twin, by tensor name.
    std::map<std::string, Tensor> float_values;
    std::map<std::string, Tensor> float_outputs;
    const bool as_pair = !kept.has_value() && paired_ != nullptr;
    // A reference to the run's buffer (copy on write), as calibration keeps
    // them: no copy.
    auto keep = [&](const std::string& name, const Tensor& v) {
      if (tensors_.count(name)) float_values[name] = v;
    };
    if (kept.has_value()) {
      float_values = std::move(kept->tensors);
      float_outputs = std::move(kept->outputs);
    } else if (!as_pair) {
      TensorObserver observer = [&](const Node& node, int k, const Tensor& v) {
        keep(node.outputs[k], v);
      };
      RunOptions fo;
      fo.observer = &observer;
      fo.cancel = cancel_;
      auto f_out = float_model_.Run(sample, fo);
      if (!f_out.ok()) {
        return absl::Status(f_out.status().code(),
                            absl::StrCat("evaluation sample ", i, ": ",
                                         f_out.status().message()));
      }
      float_outputs = *std::move(f_out);
    }
    // Compared as they come, at most four pairs held.
    SquaredErrorLanes pending([r](const std::string& name, const Sums& s) {
      Sums& acc = r->tensors[name];
      acc.signal += s.signal;
      acc.noise += s.noise;
    });
    TensorObserver compare = [&](const Node& node, int k, const Tensor& v) {
      // Kept values hold every node output, more than `tensors_`.
      if (!tensors_.count(node.outputs[k])) return;
      auto it = float_values.find(node.outputs[k]);
      if (it == float_values.end()) return;
      pending.Add(it->first, std::move(it->second), v);
      float_values.erase(it);
    };
    RunOptions qo;
    qo.observer = &compare;
    qo.rewriter = &quantizer_.rewriter();
    qo.cancel = cancel_;
    SampleFeeds q_feeds = quantizer_.FakeQuantizeFeeds(sample);
    absl::StatusOr<std::map<std::string, Tensor>> q_out;
    if (as_pair) {
      auto both = paired_->Run(sample, std::move(q_feeds), keep, qo);
      if (both.ok()) {
        float_outputs = std::move(both->float_side);
        q_out = std::move(both->fake_quant);
      } else {
        q_out = both.status();
      }
    } else {
      q_out = fake_quant_model_.Run(q_feeds, qo);
    }
    if (!q_out.ok()) {
      return absl::Status(q_out.status().code(),
                          absl::StrCat("evaluation sample ", i,
                                       as_pair ? ": " : " (fake-quant): ",
                                       q_out.status().message()));
    }
    pending.Finish();
    for (const auto& [name, f] : float_outputs) {
      auto it = q_out->find(name);
      if (it != q_out->end()) {
        CompareOutput(f, it->second, &r->outputs[name]);
      }
    }
    return absl::OkStatus();
  }

 private:
  const Executor& float_model_;
  const Executor& fake_quant_model_;
  const ActivationFakeQuantizer& quantizer_;
  const std::set<std::string>& tensors_;
  const PairedModels* paired_;
  const CancellationToken* cancel_;
};

// The samples' sums added in sample order, as figures; outputs in the
// graph's order.
EvaluationResult Summarize(const std::vector<SampleResult>& results,
                           const std::vector<ValueInfo>& graph_outputs) {
  std::map<std::string, Sums> tensor_sums;
  std::map<std::string, OutputSums> output_sums;
  for (const SampleResult& r : results) {
    for (const auto& [name, s] : r.tensors) {
      tensor_sums[name].signal += s.signal;
      tensor_sums[name].noise += s.noise;
    }
    for (const auto& [name, o] : r.outputs) {
      OutputSums& acc = output_sums[name];
      acc.sums.signal += o.sums.signal;
      acc.sums.noise += o.sums.noise;
      acc.cosine_sum += o.cosine_sum;
      acc.cosine_count += o.cosine_count;
      acc.top1_match += o.top1_match;
      acc.top1_total += o.top1_total;
    }
  }
  EvaluationResult out;
  for (const auto& [name, s] : tensor_sums) {
    out.tensor_sqnr_db[name] = SqnrDb(s.signal, s.noise);
  }
  Sums all;
  for (const auto& vi : graph_outputs) {
    auto it = output_sums.find(vi.name);
    if (it == output_sums.end()) continue;
    const OutputSums& o = it->second;
    OutputReport rep;
    rep.name = vi.name;
    rep.sqnr_db = SqnrDb(o.sums.signal, o.sums.noise);
    if (o.cosine_count > 0) rep.cosine = o.cosine_sum / o.cosine_count;
    if (o.top1_total > 0) {
      rep.top1_agreement = static_cast<double>(o.top1_match) / o.top1_total;
    }
    all.signal += o.sums.signal;
    all.noise += o.sums.noise;
    out.outputs.push_back(rep);
  }
  if (!out.outputs.empty()) out.output_sqnr_db = SqnrDb(all.signal, all.noise);
  return out;
}

}  // namespace

double SqnrDb(double signal, double noise) {
  if (noise <= 0) return std::numeric_limits<double>::infinity();
  if (signal <= 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

absl::StatusOr<EvaluationResult> EvaluateFakeQuant(
    const Executor& float_model, const Executor& fake_quant_model,
    const ActivationFakeQuantizer& quantizer,
    const std::vector<SampleFeeds>& samples,
    const std::set<std::string>& tensors, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress,
    KeptFloatRuns* kept) {
  const int64_t n = static_cast<int64_t>(samples.size());
  // Kept values serve only if they hold every tensor evaluated here that
  // the float model produces.
  bool use_kept = kept != nullptr;
  for (const Node& node : float_model.model().graph.nodes) {
    for (const std::string& out : node.outputs) {
      if (use_kept && tensors.count(out) && !kept->tensors.count(out)) {
        use_kept = false;
      }
    }
  }
  auto kept_for = [&](int64_t i) {
    return use_kept && i < static_cast<int64_t>(kept->samples.size()) &&
           kept->samples[i].has_value();
  };
  bool all_kept = true;
  for (int64_t i = 0; i < n; ++i) all_kept = all_kept && kept_for(i);
  std::unique_ptr<PairedModels> paired;
  if (!all_kept) {
    ASSIGN_OR_RETURN(paired, PairedModels::Create(float_model.model(),
                                                  fake_quant_model.model(),
                                                  fake_quant_model.options()));
  }
  const SampleEvaluator evaluator(float_model, fake_quant_model, quantizer,
                                  tensors, paired.get(), cancel);
  std::vector<SampleResult> results(n);
  SampleProgress report{progress, stage::kReport, [](int64_t d, int64_t total) {
                          return absl::StrCat("evaluated ", d, "/", total,
                                              " samples");
                        }};
  RETURN_IF_ERROR(ParallelForSamples(
      n, pool, cancel, report, [&](int64_t i) -> absl::Status {
        std::optional<KeptFloatValues> values;
        if (kept_for(i)) values.swap(kept->samples[i]);  // released as used
        return evaluator.Evaluate(i, samples[i], std::move(values),
                                  &results[i]);
      }));
  return Summarize(results, float_model.model().graph.outputs);
}

}  // namespace quantd
