// report.html: one self-contained page (inline CSS, SVG and a small sorting
// script; nothing fetched). The layer chart and table are in
// report_html_chart.cc and report_html_table.cc.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/report/internal/html_util.h"
#include "core/report/report.h"

namespace quantd {
namespace {

using report_internal::Escape;
using report_internal::Fmt;

constexpr const char* kStyle =
    "body{font-family:sans-serif;font-size:13px;margin:1.5em;color:#222}"
    "h1{font-size:1.5em;overflow-wrap:anywhere}h2{font-size:1.2em;"
    "margin-top:1.5em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px "
    "6px;text-align:left}th{background:#f4f4f4}"
    "table.summary td{overflow-wrap:anywhere}"
    "table.layers{table-layout:fixed;width:100%;font-size:12px}"
    "table.layers td,table.layers th{overflow:hidden;text-overflow:ellipsis;"
    "white-space:nowrap}"
    "table.layers th{cursor:pointer;user-select:none;white-space:normal;"
    "vertical-align:bottom}"
    "table.layers th[aria-sort=ascending]::after{content:' \\25B2'}"
    "table.layers th[aria-sort=descending]::after{content:' \\25BC'}"
    "table.layers tbody tr:nth-child(even){background:#fafafa}"
    "svg.hist{display:block}svg.chart{display:block;max-width:1200px}"
    "pre.options{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}"
    "code{overflow-wrap:anywhere}";

// Sorts a table.sortable by a clicked header: numbers by each cell's data-v
// (cells without one last), text by data-v or the text; a second click
// reverses.
constexpr const char* kSortScript =
    "document.querySelectorAll('table.sortable th[data-sort]').forEach("
    "function(th){th.addEventListener('click',function(){"
    "var t=th.closest('table'),b=t.tBodies[0],i=th.cellIndex,"
    "num=th.dataset.sort==='num',"
    "dir=th.getAttribute('aria-sort')==='ascending'?-1:1;"
    "t.querySelectorAll('th').forEach(function(h){"
    "h.removeAttribute('aria-sort');});"
    "th.setAttribute('aria-sort',dir>0?'ascending':'descending');"
    "var key=function(r){var c=r.cells[i],v=c.dataset.v!==undefined?"
    "c.dataset.v:c.textContent;return num?(v===''?NaN:parseFloat(v)):v;};"
    "var rows=Array.prototype.slice.call(b.rows);"
    "rows.sort(function(p,q){var x=key(p),y=key(q);if(num){"
    "if(isNaN(x))return isNaN(y)?0:1;if(isNaN(y))return -1;"
    "return (x-y)*dir;}return x.localeCompare(y)*dir;});"
    "rows.forEach(function(r){b.appendChild(r);});});});";

std::string Bytes(const std::optional<double>& v) {
  if (!v.has_value() || !std::isfinite(*v)) return "&ndash;";
  double b = *v;
  if (b >= 1 << 20) return absl::StrFormat("%.2f MiB", b / (1 << 20));
  if (b >= 1 << 10) return absl::StrFormat("%.2f KiB", b / (1 << 10));
  return absl::StrFormat("%.0f B", b);
}

std::string FiguresRow(const std::string& label, const ResourceFigures& f) {
  return absl::StrCat(
      "<tr><th>", label, "</th><td>", Bytes(f.weights_memory_bytes),
      "</td><td>", Bytes(f.activation_memory_bytes), "</td><td>",
      Bytes(f.total_memory_bytes), "</td><td>",
      f.bops ? absl::StrFormat("%.3g", *f.bops) : "&ndash;", "</td></tr>\n");
}

std::string Row(const char* label, const std::string& html) {
  return absl::StrCat("<tr><th>", label, "</th><td>", html, "</td></tr>\n");
}

// What ran on what: model digest, TPC, version, samples, options.
std::string Summary(const ReportData& r) {
  std::string h = "<table class=\"summary\" id=\"summary\">\n";
  h += Row("model", Escape(r.model_name));
  h += Row("model sha256",
           absl::StrCat("<code>", Escape(r.model_sha256), "</code>"));
  h += Row("TPC", absl::StrCat("<b>", Escape(r.tpc), "</b> (sha256 <code>",
                               Escape(r.tpc_digest), "</code>)"));
  h += Row("quantd version", Escape(r.quantd_version));
  h += Row("samples", absl::StrCat(r.num_calibration_samples, " calibration, ",
                                   r.num_evaluation_samples, " evaluation"));
  h += Row("output SQNR",
           absl::StrCat("<b>", Fmt(r.output_sqnr_db, " dB"), "</b>"));
  h += Row("options", r.options.empty()
                          ? std::string("defaults")
                          : absl::StrCat("<pre class=\"options\">",
                                         Escape(r.options), "</pre>"));
  h += "</table>\n";
  return h;
}

std::string Outputs(const ReportData& r) {
  std::string h =
      "<h2>Outputs</h2>\n<table><tr><th>output</th><th>SQNR</th>"
      "<th>top-1 agreement</th><th>cosine</th></tr>\n";
  for (const auto& o : r.outputs) {
    absl::StrAppend(
        &h, "<tr><td>", Escape(o.name), "</td><td>", Fmt(o.sqnr_db, " dB"),
        "</td><td>",
        o.top1_agreement ? absl::StrFormat("%.2f%%", *o.top1_agreement * 100)
                         : "&ndash;",
        "</td><td>", o.cosine ? absl::StrFormat("%.5f", *o.cosine) : "&ndash;",
        "</td></tr>\n");
  }
  h += "</table>\n";
  return h;
}

// The quality-target search: target, figures, what it changed.
std::string QualityTargetSection(const QualityTargetReport& q) {
  const bool db = q.metric == "sqnr";
  const auto figure = [&](const std::optional<double>& v) {
    if (!v.has_value()) return std::string("&ndash;");
    return db ? Fmt(v, " dB") : absl::StrFormat("%.5f", *v);
  };
  std::string h = "<h2>Quality target</h2>\n<table class=\"summary\">\n";
  h += Row("target", absl::StrCat(Escape(q.metric), " &ge; ",
                                  db ? absl::StrFormat("%.2f dB", q.target)
                                     : absl::StrFormat("%.5f", q.target)));
  h += Row("as configured", figure(q.baseline));
  h += Row("reached", absl::StrCat("<b>", figure(q.reached), "</b> (",
                                   q.met ? "met" : "not met", ")"));
  h += "</table>\n<table><tr><th>node</th><th>what</th><th>from</th>"
       "<th>to</th></tr>\n";
  for (const QualityTargetChange& c : q.changes) {
    absl::StrAppend(&h, "<tr><td>", Escape(c.node), "</td><td>", Escape(c.what),
                    "</td><td>", Escape(c.from), "</td><td>", Escape(c.to),
                    "</td></tr>\n");
  }
  h += "</table>\n";
  return h;
}

}  // namespace

std::string ReportToHtml(const ReportData& r) {
  std::string h;
  h += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n";
  absl::StrAppend(&h, "<title>quantd report: ", Escape(r.model_name),
                  "</title>\n<style>", kStyle, "</style>\n</head><body>\n");
  absl::StrAppend(&h, "<h1>quantd report: ", Escape(r.model_name), "</h1>\n");
  h += Summary(r);
  h += Outputs(r);
  if (r.quality_target.has_value()) {
    h += QualityTargetSection(*r.quality_target);
  }
  h += "<h2>Resources</h2>\n<table><tr><th></th><th>weights</th>"
       "<th>activations</th><th>total</th><th>BOPs</th></tr>\n";
  h += FiguresRow("quantized", r.resource_utilization);
  h += FiguresRow("8-bit baseline", r.baseline_8bit);
  h += FiguresRow("targets", r.targets);
  h += "</table>\n<h2>Layers</h2>\n";
  h += report_internal::LayersChart(r);
  h += "<p>Click a column header to sort; hover a cut name for the full "
       "one.</p>\n";
  h += report_internal::LayersTable(r);
  if (!r.warnings.empty()) {
    h += "<h2>Warnings</h2>\n<ul>\n";
    for (const auto& w : r.warnings) {
      absl::StrAppend(&h, "<li>", Escape(w), "</li>\n");
    }
    h += "</ul>\n";
  }
  if (!r.timings_seconds.empty()) {
    h += "<h2>Timings</h2>\n<table>\n";
    for (const auto& [stage, s] : r.timings_seconds) {
      absl::StrAppend(&h, "<tr><th>", Escape(stage), "</th><td>",
                      absl::StrFormat("%.3f s", s), "</td></tr>\n");
    }
    h += "</table>\n";
  }
  absl::StrAppend(&h, "<script>", kSortScript, "</script>\n");
  h += "</body></html>\n";
  return h;
}

}  // namespace quantd
