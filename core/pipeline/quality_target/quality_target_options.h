// What a job asks of the quality target (QuantizeRequest.quality_target,
// resolved once by the job spec; docs/quality_target.md).
#ifndef QUANTD_CORE_PIPELINE_QUALITY_TARGET_QUALITY_TARGET_OPTIONS_H_
#define QUANTD_CORE_PIPELINE_QUALITY_TARGET_QUALITY_TARGET_OPTIONS_H_

namespace quantd {

struct QualityTargetOptions {
  enum class Metric {
    kSqnr,    // output SQNR against float, dB
    kCosine,  // the worst output's mean cosine similarity, in (-1, 1]
  };
  Metric metric = Metric::kSqnr;
  double value = 0;
  // Out of reach: the best configuration found instead of an error.
  bool best_effort = false;
  // No GPTQ trial when the search falls short.
  bool skip_gptq = false;
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_QUALITY_TARGET_QUALITY_TARGET_OPTIONS_H_
