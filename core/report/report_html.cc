#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/report/report.h"

namespace quantd {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Fmt(const std::optional<double>& v, const char* unit = "") {
  if (!v.has_value()) return "&ndash;";
  if (!std::isfinite(*v)) return *v > 0 ? "exact" : "&ndash;";
  return absl::StrFormat("%.2f%s", *v, unit);
}

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

// One row per layer: weight bits (blue) and activation bits (orange) bars on
// the left scale, SQNR (dB) as a dot on the right scale.
std::string Chart(const ReportData& r) {
  const int row = 18, label_w = 260, bits_w = 200, sqnr_w = 260, pad = 10;
  const int n = static_cast<int>(r.layers.size());
  const int height = 40 + n * row + pad;
  const int width = label_w + bits_w + sqnr_w + 3 * pad;
  double max_sqnr = 10;
  for (const auto& l : r.layers) {
    if (l.sqnr_db && std::isfinite(*l.sqnr_db)) {
      max_sqnr = std::max(max_sqnr, *l.sqnr_db);
    }
  }
  max_sqnr = std::ceil(max_sqnr / 10) * 10;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width, height);
  const int bx = label_w + pad, sx = bx + bits_w + pad;
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"14\">bits (weights blue, "
                        "activation orange; full bar = 16)</text>\n",
                        bx);
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"14\">SQNR vs float, 0..%.0f "
                        "dB</text>\n",
                        sx, max_sqnr);
  for (int i = 0; i < n; ++i) {
    const LayerReport& l = r.layers[i];
    const int y = 30 + i * row;
    absl::StrAppendFormat(&svg,
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s "
                          "(%s)</text>\n",
                          label_w, y + 12, Escape(l.node), Escape(l.op_type));
    const double unit = bits_w / 16.0;
    if (l.weights_bits > 0) {
      absl::StrAppendFormat(
          &svg,
          "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"7\" "
          "fill=\"#3b6fb6\"><title>weights %d bit</title></rect>\n",
          bx, y + 2, std::min(16, l.weights_bits) * unit, l.weights_bits);
    }
    if (l.activation_bits > 0) {
      absl::StrAppendFormat(
          &svg,
          "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"7\" "
          "fill=\"#e08a2c\"><title>activation %d bit</title></rect>\n",
          bx, y + 9, std::min(16, l.activation_bits) * unit, l.activation_bits);
    }
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" "
                          "stroke=\"#ddd\"/>\n",
                          sx, sx + sqnr_w, y + 9, y + 9);
    if (l.sqnr_db && std::isfinite(*l.sqnr_db)) {
      double v = std::clamp(*l.sqnr_db, 0.0, max_sqnr);
      absl::StrAppendFormat(
          &svg,
          "<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" fill=\"#b63b3b\"><title>%.2f "
          "dB</title></circle>\n",
          sx + v / max_sqnr * sqnr_w, y + 9, *l.sqnr_db);
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace

std::string ReportToHtml(const ReportData& r) {
  std::string h;
  h += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n";
  absl::StrAppend(&h, "<title>quantd report: ", Escape(r.model_name),
                  "</title>\n");
  h += "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
       "collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
       "th{background:#f4f4f4}</style>\n</head><body>\n";
  absl::StrAppend(&h, "<h1>quantd report: ", Escape(r.model_name), "</h1>\n");
  absl::StrAppend(&h, "<p>TPC <b>", Escape(r.tpc), "</b> (sha256 ",
                  Escape(r.tpc_digest), "), ", r.num_calibration_samples,
                  " calibration and ", r.num_evaluation_samples,
                  " evaluation samples. Output SQNR: <b>",
                  Fmt(r.output_sqnr_db, " dB"), "</b></p>\n");
  h += "<h2>Outputs</h2>\n<table><tr><th>output</th><th>SQNR</th>"
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
  h += "</table>\n<h2>Resources</h2>\n<table><tr><th></th><th>weights</th>"
       "<th>activations</th><th>total</th><th>BOPs</th></tr>\n";
  h += FiguresRow("quantized", r.resource_utilization);
  h += FiguresRow("8-bit baseline", r.baseline_8bit);
  h += FiguresRow("targets", r.targets);
  h += "</table>\n<h2>Layers</h2>\n";
  h += Chart(r);
  h += "<table><tr><th>node</th><th>op</th><th>op set</th><th>fused "
       "group</th><th>weights</th><th>activation</th><th>SQNR</th><th>"
       "note</th></tr>\n";
  for (const auto& l : r.layers) {
    absl::StrAppend(
        &h, "<tr><td>", Escape(l.node), "</td><td>", Escape(l.op_type),
        "</td><td>", Escape(l.op_set), "</td><td>", Escape(l.fused_group),
        "</td><td>",
        l.weights_bits
            ? absl::StrCat(l.weights_bits, " bit ", Escape(l.weights_method))
            : "float",
        "</td><td>",
        l.activation_bits ? absl::StrCat(l.activation_bits, " bit ",
                                         Escape(l.activation_method))
                          : "&ndash;",
        "</td><td>", Fmt(l.sqnr_db, " dB"), "</td><td>", Escape(l.float_reason),
        "</td></tr>\n");
  }
  h += "</table>\n";
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
  h += "</body></html>\n";
  return h;
}

}  // namespace quantd
