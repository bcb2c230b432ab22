// The stage names jobs report (Progress::stage, report.json
// timings_seconds, the server's logs and pacing): one spelling each, since
// clients match on them.
#ifndef QUANTD_CORE_RUNTIME_STAGE_NAMES_H_
#define QUANTD_CORE_RUNTIME_STAGE_NAMES_H_

namespace quantd::stage {

// Every job kind.
inline constexpr char kImport[] = "import";
// Quantize, in pipeline order.
inline constexpr char kGenerate[] = "generate";  // also GenerateData and Prune
inline constexpr char kPrepare[] = "prepare";
inline constexpr char kCalibrate[] = "calibrate";
inline constexpr char kHessian[] = "hessian";
inline constexpr char kSelect[] = "select";
inline constexpr char kMixedPrecision[] = "mixed_precision";
inline constexpr char kTarget[] = "target";
inline constexpr char kCorrect[] = "correct";
inline constexpr char kGptq[] = "gptq";
inline constexpr char kExport[] = "export";
inline constexpr char kAnalyze[] = "analyze";
inline constexpr char kReport[] = "report";
// Prune.
inline constexpr char kImportance[] = "importance";
inline constexpr char kPrune[] = "prune";
inline constexpr char kEvaluate[] = "evaluate";

}  // namespace quantd::stage

#endif  // QUANTD_CORE_RUNTIME_STAGE_NAMES_H_
