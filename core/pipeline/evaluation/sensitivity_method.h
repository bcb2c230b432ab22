// How the per-layer sensitivity analysis computes its figures
// (QuantizeRequest.sensitivity_analysis_method, docs/analysis.md).
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_SENSITIVITY_METHOD_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_SENSITIVITY_METHOD_H_

namespace quantd {

// kAuto: the estimate when the float model has a backward pass for every
// op on its path, else the exact analysis.
enum class SensitivityMethod { kAuto, kEstimate, kExact };

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_SENSITIVITY_METHOD_H_
