#include "core/pipeline/evaluation/evaluation.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "core/pipeline/evaluation/paired_models.h"
#include "core/pipeline/evaluation/squared_error_sums.h"
#include "core/pipeline/job/parallel_samples.h"
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
  // Samples without kept values run both models as one graph where they can
  // (paired_models.h), else the float model first, holding its values.
  bool all_kept = true;
  for (int64_t i = 0; i < n; ++i) all_kept = all_kept && kept_for(i);
  std::unique_ptr<PairedModels> paired;
  if (!all_kept) {
    ASSIGN_OR_RETURN(paired, PairedModels::Create(float_model.model(),
                                                  fake_quant_model.model(),
                                                  fake_quant_model.options()));
  }
  std::vector<SampleResult> results(n);
  SampleProgress report{progress, "report", [](int64_t d, int64_t total) {
                          return absl::StrCat("evaluated ", d, "/", total,
                                              " samples");
                        }};
  RETURN_IF_ERROR(ParallelForSamples(
      n, pool, cancel, report, [&](int64_t i) -> absl::Status {
        SampleResult& r = results[i];
        // Float values waiting for their fake-quant twin, by tensor name.
        std::map<std::string, Tensor> float_values;
        std::map<std::string, Tensor> float_outputs;
        const bool is_kept = kept_for(i);
        const bool as_pair = !is_kept && paired != nullptr;
        if (is_kept) {
          KeptFloatValues& k = *kept->samples[i];
          float_values = std::move(k.tensors);
          float_outputs = std::move(k.outputs);
          kept->samples[i].reset();
        } else if (!as_pair) {
          TensorObserver keep = [&](const Node& node, int k, const Tensor& v) {
            // A reference to the run's buffer (copy on write), as
            // calibration keeps them: no copy.
            if (tensors.count(node.outputs[k]))
              float_values[node.outputs[k]] = v;
          };
          RunOptions fo;
          fo.observer = &keep;
          fo.cancel = cancel;
          auto f_out = float_model.Run(samples[i], fo);
          if (!f_out.ok()) {
            return absl::Status(f_out.status().code(),
                                absl::StrCat("evaluation sample ", i, ": ",
                                             f_out.status().message()));
          }
          float_outputs = *std::move(f_out);
        }
        // Compared as they come, at most four pairs held.
        SquaredErrorLanes pending([&r](const std::string& name, const Sums& s) {
          Sums& acc = r.tensors[name];
          acc.signal += s.signal;
          acc.noise += s.noise;
        });
        TensorObserver compare = [&](const Node& node, int k, const Tensor& v) {
          const std::string& name = node.outputs[k];
          absl::string_view original;
          if (as_pair && PairedModels::FloatSide(name, &original)) {
            // A reference to the run's buffer (copy on write), not a copy.
            if (tensors.count(std::string(original))) {
              float_values[std::string(original)] = v;
            }
            return;
          }
          if (!tensors.count(name)) return;
          auto it = float_values.find(name);
          if (it == float_values.end()) return;
          pending.Add(it->first, std::move(it->second), v);
          float_values.erase(it);
        };
        RunOptions qo;
        qo.observer = &compare;
        qo.rewriter = &quantizer.rewriter();
        qo.cancel = cancel;
        absl::StatusOr<std::map<std::string, Tensor>> q_out;
        if (as_pair) {
          q_out = paired->executor().Run(
              paired->Feeds(samples[i],
                            quantizer.FakeQuantizeFeeds(samples[i])),
              qo);
          if (q_out.ok()) {
            for (auto it = q_out->begin(); it != q_out->end();) {
              absl::string_view original;
              if (!PairedModels::FloatSide(it->first, &original)) {
                ++it;
                continue;
              }
              float_outputs[std::string(original)] = std::move(it->second);
              it = q_out->erase(it);
            }
          }
        } else {
          q_out =
              fake_quant_model.Run(quantizer.FakeQuantizeFeeds(samples[i]), qo);
        }
        if (!q_out.ok()) {
          // A float-side node's label reads as the float model's.
          return absl::Status(
              q_out.status().code(),
              absl::StrCat("evaluation sample ", i,
                           as_pair ? ": " : " (fake-quant): ",
                           absl::StrReplaceAll(q_out.status().message(),
                                               {{kFloatPrefix, "float "}})));
        }
        pending.Finish();
        for (const auto& [name, f] : float_outputs) {
          auto it = q_out->find(name);
          if (it != q_out->end()) {
            CompareOutput(f, it->second, &r.outputs[name]);
          }
        }
        return absl::OkStatus();
      }));
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
  // Graph output order, not map order.
  for (const auto& vi : float_model.model().graph.outputs) {
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

}  // namespace quantd
