#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/report/report.h"
#include "core/util/json_text.h"
#include "nlohmann/json.hpp"

namespace quantd {
namespace {

using Json = nlohmann::json;

// NaN/inf have no JSON form: null (e.g. the SQNR of an exact output).
Json Number(const std::optional<double>& v) {
  if (!v.has_value() || !std::isfinite(*v)) return nullptr;
  return *v;
}

Json Figures(const ResourceFigures& f) {
  Json j = Json::object();
  j["weights_memory_bytes"] = Number(f.weights_memory_bytes);
  j["activation_memory_bytes"] = Number(f.activation_memory_bytes);
  j["total_memory_bytes"] = Number(f.total_memory_bytes);
  j["bops"] = Number(f.bops);
  return j;
}

// Report details: the output activation's grid, its coarse
// calibration histogram and the kernel's threshold span; keys only when set.
void AddLayerDetails(const LayerReport& l, Json* e) {
  if (l.activation_grid.has_value()) {
    const ActivationGrid& g = *l.activation_grid;
    Json a = Json::object();
    if (g.threshold.has_value()) a["threshold"] = Number(g.threshold);
    if (g.range_min.has_value()) a["range_min"] = Number(g.range_min);
    if (g.range_max.has_value()) a["range_max"] = Number(g.range_max);
    a["scale"] = Number(g.scale);
    a["zero_point"] = g.zero_point;
    a["signed"] = g.is_signed;
    (*e)["activation_grid"] = std::move(a);
  }
  if (l.activation_histogram.has_value()) {
    const ActivationHistogram& h = *l.activation_histogram;
    Json hist = Json::object();
    hist["min"] = Number(h.min);
    hist["max"] = Number(h.max);
    hist["counts"] = h.counts;
    (*e)["activation_histogram"] = std::move(hist);
  }
  if (l.weights_threshold_max.has_value()) {
    (*e)["weights_threshold_min"] = Number(l.weights_threshold_min);
    (*e)["weights_threshold_max"] = Number(l.weights_threshold_max);
  }
}

// The analysed layers, most sensitive first: lowest SQNR when only the layer
// is quantized (exact = +inf last), then highest SQNR when only it is left
// float, then graph order.
Json Sensitivity(const std::vector<LayerReport>& layers) {
  std::vector<const LayerReport*> rows;
  for (const LayerReport& l : layers) {
    if (l.sqnr_only_quantized_db || l.sqnr_only_float_db) rows.push_back(&l);
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto key = [&](const std::optional<double>& v, double unset) {
    return v.has_value() && !std::isnan(*v) ? *v : unset;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto* a, const auto* b) {
    const double qa = key(a->sqnr_only_quantized_db, kInf);
    const double qb = key(b->sqnr_only_quantized_db, kInf);
    if (qa != qb) return qa < qb;
    return key(a->sqnr_only_float_db, -kInf) >
           key(b->sqnr_only_float_db, -kInf);
  });
  Json out = Json::array();
  for (const LayerReport* l : rows) {
    Json e = Json::object();
    e["node"] = l->node;
    e["sqnr_only_quantized_db"] = Number(l->sqnr_only_quantized_db);
    e["sqnr_only_float_db"] = Number(l->sqnr_only_float_db);
    e["method"] = l->sensitivity_estimated ? "estimate" : "exact";
    out.push_back(std::move(e));
  }
  return out;
}

double Ratio(const std::optional<double>& a, const std::optional<double>& b) {
  return a && b && *b > 0 ? *a / *b : std::numeric_limits<double>::quiet_NaN();
}

Json QualityTarget(const ReportData& r, bool with_timings) {
  const QualityTargetReport& q = *r.quality_target;
  Json j = Json::object();
  j["metric"] = q.metric;
  j["target"] = q.target;
  j["baseline"] = Number(q.baseline);
  j["reached"] = Number(q.reached);
  j["met"] = q.met;
  // `gain`: the figure against the configuration the search stood at (the
  // last kept step's).
  Json steps = Json::array();
  std::optional<double> stood_at;
  for (const QualityTargetStep& s : q.steps) {
    Json step = {
        {"action", s.action}, {"figure", Number(s.figure)}, {"kept", s.kept}};
    step["gain"] = s.figure && stood_at
                       ? Number(std::optional<double>(*s.figure - *stood_at))
                       : Json(nullptr);
    if (with_timings) step["seconds"] = s.seconds;
    if (s.kept && s.figure) stood_at = s.figure;
    steps.push_back(std::move(step));
  }
  j["steps"] = std::move(steps);
  Json changes = Json::array();
  for (const QualityTargetChange& c : q.changes) {
    changes.push_back(
        {{"node", c.node}, {"what", c.what}, {"from", c.from}, {"to", c.to}});
  }
  j["changes"] = std::move(changes);
  const ResourceFigures& a = r.resource_utilization;
  const ResourceFigures& b = r.baseline_8bit;
  j["memory_vs_8bit"] = {
      {"weights",
       Number(Ratio(a.weights_memory_bytes, b.weights_memory_bytes))},
      {"activation",
       Number(Ratio(a.activation_memory_bytes, b.activation_memory_bytes))},
      {"total", Number(Ratio(a.total_memory_bytes, b.total_memory_bytes))}};
  return j;
}

}  // namespace

std::string ReportToJson(const ReportData& r, bool with_timings) {
  Json j = Json::object();
  j["model"] = r.model_name;
  j["tpc"] = r.tpc;
  j["tpc_digest"] = r.tpc_digest;
  j["num_calibration_samples"] = r.num_calibration_samples;
  j["num_evaluation_samples"] = r.num_evaluation_samples;
  j["resource_utilization"] = Figures(r.resource_utilization);
  j["baseline_8bit"] = Figures(r.baseline_8bit);
  j["targets"] = Figures(r.targets);
  Json layers = Json::array();
  for (const LayerReport& l : r.layers) {
    Json e = Json::object();
    e["node"] = l.node;
    e["op_type"] = l.op_type;
    e["op_set"] = l.op_set;
    e["fused_group"] = l.fused_group;
    e["weights_bits"] = l.weights_bits;
    e["activation_bits"] = l.activation_bits;
    e["weights_method"] = l.weights_method;
    e["activation_method"] = l.activation_method;
    e["sqnr_db"] = Number(l.sqnr_db);
    e["float_reason"] = l.float_reason;
    if (l.gptq_sqnr_before_db.has_value()) {
      e["gptq_sqnr_before_db"] = Number(l.gptq_sqnr_before_db);
      e["gptq_sqnr_after_db"] = Number(l.gptq_sqnr_after_db);
      e["gptq_applied"] = l.gptq_applied;
    }
    AddLayerDetails(l, &e);
    layers.push_back(std::move(e));
  }
  j["layers"] = std::move(layers);
  // Only when the analysis ran: reports without it keep their bytes.
  Json sensitivity = Sensitivity(r.layers);
  if (!sensitivity.empty()) j["sensitivity"] = std::move(sensitivity);
  j["output_sqnr_db"] = Number(r.output_sqnr_db);
  Json outputs = Json::array();
  for (const OutputReport& o : r.outputs) {
    Json e = Json::object();
    e["name"] = o.name;
    e["sqnr_db"] = Number(o.sqnr_db);
    e["top1_agreement"] = Number(o.top1_agreement);
    e["cosine"] = Number(o.cosine);
    outputs.push_back(std::move(e));
  }
  j["outputs"] = std::move(outputs);
  j["warnings"] = r.warnings;
  // Only with a target: reports without one keep their bytes.
  if (r.quality_target.has_value()) {
    j["quality_target"] = QualityTarget(r, with_timings);
  }
  // Report details: what ran, on what.
  j["model_sha256"] = r.model_sha256;
  j["quantd_version"] = r.quantd_version;
  j["options"] = r.options;
  if (with_timings) {
    Json t = Json::object();
    double total = 0;
    for (const auto& [stage, seconds] : r.timings_seconds) {
      t[stage] = seconds;
      total += seconds;
    }
    t["total"] = total;
    j["timings_seconds"] = std::move(t);
  }
  return JsonText(j, 2) + "\n";  // names from the user's model
}

}  // namespace quantd
