#include "core/pruning/output_sqnr.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/evaluation.h"
#include "core/util/status_macros.h"

namespace quantd::pruning {

absl::StatusOr<double> OutputSqnrDb(const Model& reference, const Model& pruned,
                                    const std::vector<SampleFeeds>& samples,
                                    ThreadPool* pool,
                                    const CancellationToken* cancel) {
  ExecutorOptions options;
  options.pool = pool;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> ref,
                   Executor::Create(reference, options));
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> cut,
                   Executor::Create(pruned, options));
  RunOptions run;
  run.cancel = cancel;
  double signal = 0, noise = 0;
  for (const SampleFeeds& feeds : samples) {
    ASSIGN_OR_RETURN(auto a, ref->Run(feeds, run));
    ASSIGN_OR_RETURN(auto b, cut->Run(feeds, run));
    for (const auto& [name, x] : a) {
      if (x.dtype() != DType::kFloat) continue;
      const Tensor& y = b.at(name);
      if (y.shape() != x.shape()) {
        return absl::InternalError(
            absl::StrCat("pruning changed the shape of output '", name, "'"));
      }
      const float* p = x.data<float>();
      const float* q = y.data<float>();
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        signal += double{p[i]} * p[i];
        const double d = double{p[i]} - q[i];
        noise += d * d;
      }
    }
  }
  // NaN in either model's outputs would read as +inf ("identical").
  if (!std::isfinite(signal) || !std::isfinite(noise)) {
    return absl::InternalError(absl::StrCat(
        "evaluate: the output SQNR is undefined (signal power ", signal,
        ", noise power ", noise, "): the outputs hold non-finite values"));
  }
  return SqnrDb(signal, noise);
}

}  // namespace quantd::pruning
