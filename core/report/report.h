// The job report: what was quantized how, and what it costs in accuracy and
// resources. Rendered as report.json (keys listed in DESIGN.md) and as a
// self-contained report.html (inline SVG charts and a small inline script
// that sorts the layer table; nothing is fetched from the network).
//
// Every field is deterministic for a given request except
// `timings_seconds`, which is wall-clock time per stage. Tools that compare
// reports byte for byte drop that key (ReportToJson(..., false) does).
#ifndef QUANTD_CORE_REPORT_REPORT_H_
#define QUANTD_CORE_REPORT_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/mixed_precision/resource_figures.h"

namespace quantd {

using mixed_precision::ResourceFigures;

// A coarse histogram of an activation's calibration values: `counts` bins of
// equal width over [min, max] (the statistics stage's 2048 bins, merged).
struct ActivationHistogram {
  double min = 0, max = 0;
  std::vector<double> counts;
};

// The grid of a node's output activation, as the QuantizedGraph states it.
struct ActivationGrid {
  std::optional<double> threshold;             // POT / SYMMETRIC / LUT
  std::optional<double> range_min, range_max;  // UNIFORM
  double scale = 0;
  int64_t zero_point = 0;
  bool is_signed = false;
};

struct LayerReport {
  std::string node;
  std::string op_type;
  std::string op_set;             // "" when the node matched no op set
  std::string fused_group;        // "" when not fused
  int weights_bits = 0;           // 0: weights float / none
  int activation_bits = 0;        // 0: output not quantized here
  std::string weights_method;     // "SYMMETRIC", ... or "" when float
  std::string activation_method;  // "POWER_OF_TWO", ... or ""
  std::optional<double> sqnr_db;  // unset: not measured / exact
  std::string float_reason;       // why (part of) the node stays float
  // GPTQ: the block output's SQNR on the sampled calibration positions with
  // the PTQ weights and after training (unset when GPTQ did not train it).
  std::optional<double> gptq_sqnr_before_db, gptq_sqnr_after_db;
  bool gptq_applied = false;  // the trained weights were kept
  // Sensitivity analysis: the model output's SQNR when only this
  // node's tensors are quantized, and when only they are left float (unset
  // when the analysis did not run).
  std::optional<double> sqnr_only_quantized_db, sqnr_only_float_db;
  bool sensitivity_estimated = false;  // the first-order estimate's figures
  // The output activation's grid and calibration histogram (unset when the
  // node quantizes no output or no histogram was collected for it).
  std::optional<ActivationGrid> activation_grid;
  std::optional<ActivationHistogram> activation_histogram;
  // The kernel's thresholds (or range ends, UNIFORM) over its channels.
  std::optional<double> weights_threshold_min, weights_threshold_max;
};

struct OutputReport {
  std::string name;
  std::optional<double> sqnr_db;
  std::optional<double> top1_agreement;  // classifier-like outputs only
  std::optional<double> cosine;          // mean cosine similarity
};

// The quality-target search (docs/quality_target.md).
struct QualityTargetChange {
  std::string node;  // "" for a job-wide option
  std::string what;  // "activation_bits", "weights_bits" or an option name
  std::string from, to;
};

struct QualityTargetStep {
  std::string action;  // what the trial changed
  std::optional<double> figure;
  bool kept = false;   // the search went on from this trial
  double seconds = 0;  // what the trial cost (written with the timings)
};

struct QualityTargetReport {
  std::string metric;  // "sqnr" (dB) or "cosine"
  double target = 0;
  std::optional<double> baseline;  // the configuration as requested
  std::optional<double> reached;   // the final model's, on the same samples
  bool met = false;
  std::vector<QualityTargetStep> steps;
  std::vector<QualityTargetChange> changes;
};

struct ReportData {
  std::string model_name;
  std::string model_sha256;    // of the ONNX bytes sent
  std::string quantd_version;  // QuantdVersion() of the engine that ran
  // The request's settings that change the result, as protobuf text.
  std::string options;
  std::string tpc;
  std::string tpc_digest;
  int num_calibration_samples = 0;
  int num_evaluation_samples = 0;
  ResourceFigures resource_utilization;
  ResourceFigures baseline_8bit;
  ResourceFigures targets;
  std::vector<LayerReport> layers;
  std::optional<double> output_sqnr_db;
  std::vector<OutputReport> outputs;
  std::vector<std::string> warnings;
  // Set when the request had a quality target.
  std::optional<QualityTargetReport> quality_target;
  // Stage name -> seconds, in stage order.
  std::vector<std::pair<std::string, double>> timings_seconds;
};

// Pretty-printed JSON with sorted keys; `with_timings=false` omits
// `timings_seconds` (the one non-deterministic field).
std::string ReportToJson(const ReportData& report, bool with_timings = true);

// A standalone HTML page: a summary (model digest, TPC, version, options),
// output and resource tables, a per-layer chart of bits and SQNR, and a
// sortable per-layer table with a histogram per activation (inline SVG).
std::string ReportToHtml(const ReportData& report);

// The project's version (CMake's PROJECT_VERSION), e.g. "0.1.0".
std::string QuantdVersion();

}  // namespace quantd

#endif  // QUANTD_CORE_REPORT_REPORT_H_
