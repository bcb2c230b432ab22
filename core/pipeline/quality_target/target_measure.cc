#include "core/pipeline/quality_target/target_measure.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/evaluation/evaluation.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Per output: sums of squares and the cosine, as evaluation.cc's.
struct OutputSums {
  double signal = 0, noise = 0;
  double cosine_sum = 0;
  int64_t cosine_count = 0;
};

void Compare(const Tensor& f, const Tensor& q, OutputSums* o) {
  if (f.dtype() != DType::kFloat || q.dtype() != DType::kFloat ||
      f.num_elements() != q.num_elements()) {
    return;
  }
  auto a = f.span<float>();
  auto b = q.span<float>();
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    o->signal += static_cast<double>(a[i]) * a[i];
    o->noise += d * d;
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  if (a.empty()) return;
  if (na > 0 && nb > 0) {
    o->cosine_sum += dot / std::sqrt(na * nb);
    o->cosine_count++;
  } else if (na == 0 && nb == 0) {
    o->cosine_sum += 1;
    o->cosine_count++;
  }
}

}  // namespace

absl::StatusOr<QualityMeter> QualityMeter::Create(
    const Executor& float_model, const std::vector<SampleFeeds>& samples,
    ThreadPool* pool, const CancellationToken* cancel) {
  QualityMeter m;
  m.samples_ = &samples;
  for (const auto& vi : float_model.model().graph.outputs) {
    m.output_names_.push_back(vi.name);
  }
  m.float_outputs_.resize(samples.size());
  RETURN_IF_ERROR(ParallelForSamples(
      static_cast<int64_t>(samples.size()), pool, cancel, SampleProgress(),
      [&](int64_t i) -> absl::Status {
        RunOptions o;
        o.cancel = cancel;
        ASSIGN_OR_RETURN(m.float_outputs_[i], float_model.Run(samples[i], o));
        return absl::OkStatus();
      }));
  return m;
}

absl::StatusOr<QualityFigures> QualityMeter::Measure(
    const JobState& state, const ExportOptions& export_options,
    ThreadPool* pool, const CancellationToken* cancel) const {
  ASSIGN_OR_RETURN(QdqPlan plan, LowerToQdqPlan(state, export_options));
  ASSIGN_OR_RETURN(Model fq_model, WithFakeQuantWeights(state.model, plan));
  ExecutorOptions exec_options;
  exec_options.pool = pool;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> fq,
                   Executor::Create(std::move(fq_model), exec_options));
  ActivationFakeQuantizer quantizer(plan);
  const std::vector<SampleFeeds>& samples = *samples_;
  const size_t n_out = output_names_.size();
  std::vector<std::vector<OutputSums>> per_sample(
      samples.size(), std::vector<OutputSums>(n_out));
  RETURN_IF_ERROR(ParallelForSamples(
      static_cast<int64_t>(samples.size()), pool, cancel, SampleProgress(),
      [&](int64_t i) -> absl::Status {
        RunOptions o;
        o.rewriter = &quantizer.rewriter();
        o.cancel = cancel;
        auto q = fq->Run(quantizer.FakeQuantizeFeeds(samples[i]), o);
        if (!q.ok()) {
          return absl::Status(q.status().code(),
                              absl::StrCat("quality target: sample ", i, ": ",
                                           q.status().message()));
        }
        for (size_t k = 0; k < n_out; ++k) {
          auto f = float_outputs_[i].find(output_names_[k]);
          auto v = q->find(output_names_[k]);
          if (f != float_outputs_[i].end() && v != q->end()) {
            Compare(f->second, v->second, &per_sample[i][k]);
          }
        }
        return absl::OkStatus();
      }));
  std::vector<OutputSums> sums(n_out);
  for (const auto& s : per_sample) {  // sample order
    for (size_t k = 0; k < n_out; ++k) {
      sums[k].signal += s[k].signal;
      sums[k].noise += s[k].noise;
      sums[k].cosine_sum += s[k].cosine_sum;
      sums[k].cosine_count += s[k].cosine_count;
    }
  }
  double signal = 0, noise = 0;
  QualityFigures out;
  for (const OutputSums& s : sums) {  // graph output order
    signal += s.signal;
    noise += s.noise;
    if (s.cosine_count > 0) {
      out.cosine = std::min(out.cosine, s.cosine_sum / s.cosine_count);
    }
  }
  out.sqnr_db = SqnrDb(signal, noise);
  return out;
}

double Figure(const QualityFigures& f, QualityTargetOptions::Metric metric) {
  return metric == QualityTargetOptions::Metric::kCosine ? f.cosine : f.sqnr_db;
}

}  // namespace quantd
