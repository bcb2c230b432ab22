// The per-layer table of report.html: fixed layout (it never grows wider
// than the page, long names are cut with the full name on hover), every
// column sortable by the page's script through the `data-sort` of its
// header and the `data-v` of its cells.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/report/internal/html_util.h"
#include "core/report/report.h"

namespace quantd::report_internal {
namespace {

struct Column {
  const char* label;
  const char* sort;   // "num" or "text"
  const char* width;  // CSS width of the <col>
  const char* tip;    // the header's title
};

// Method names as the TPC spells them, shortened for the table.
std::string MethodCell(const std::string& method) {
  if (method.empty()) return "<td data-v=\"\">&ndash;</td>";
  std::string shown = method;
  if (method == "POWER_OF_TWO") shown = "POT";
  if (method == "SYMMETRIC") shown = "SYM";
  if (method == "UNIFORM") shown = "UNI";
  if (method == "LUT_POT_QUANTIZER") shown = "LUT POT";
  if (method == "LUT_SYM_QUANTIZER") shown = "LUT SYM";
  return absl::StrCat("<td data-v=\"", Escape(method), "\" title=\"",
                      Escape(method), "\">", Escape(ShortName(shown, 8)),
                      "</td>");
}

// A numeric cell: `shown` as text, `v` as the sort key (empty: sorts last).
std::string NumCell(const std::string& shown, const std::optional<double>& v) {
  if (!v.has_value() || std::isnan(*v)) {
    return absl::StrCat("<td data-v=\"\">", shown, "</td>");
  }
  const std::string key = std::isinf(*v) ? (*v > 0 ? "1e308" : "-1e308")
                                         : absl::StrFormat("%.17g", *v);
  return absl::StrCat("<td data-v=\"", key, "\">", shown, "</td>");
}

std::string BitsCell(int bits) {
  return bits > 0 ? NumCell(absl::StrCat(bits), bits)
                  : "<td data-v=\"0\">float</td>";
}

std::string TextCell(const std::string& text, size_t max_chars) {
  return absl::StrCat("<td data-v=\"", Escape(text), "\">",
                      text.empty() ? "" : NameCell(text, max_chars), "</td>");
}

std::string WeightsThresholdCell(const LayerReport& l) {
  if (!l.weights_threshold_max.has_value()) return NumCell("&ndash;", {});
  const double lo = l.weights_threshold_min.value_or(*l.weights_threshold_max);
  const double hi = *l.weights_threshold_max;
  // Three digits fit the column; the title has six.
  const std::string shown = lo == hi
                                ? absl::StrFormat("%.3g", hi)
                                : absl::StrFormat("%.3g&hellip;%.3g", lo, hi);
  return NumCell(
      absl::StrCat("<span title=\"", absl::StrFormat("%.6g .. %.6g", lo, hi),
                   "\">", shown, "</span>"),
      hi);
}

// The activation's threshold T or its range [min, max].
std::string ActivationRangeCell(const LayerReport& l) {
  if (!l.activation_grid.has_value()) return NumCell("&ndash;", {});
  const ActivationGrid& g = *l.activation_grid;
  if (g.threshold.has_value()) {
    return NumCell(
        absl::StrCat(g.is_signed ? "&plusmn;" : "", Num(*g.threshold)),
        *g.threshold);
  }
  if (g.range_min.has_value() && g.range_max.has_value()) {
    return NumCell(
        absl::StrCat("[", Num(*g.range_min), ", ", Num(*g.range_max), "]"),
        *g.range_max - *g.range_min);
  }
  return NumCell("&ndash;", {});
}

std::string HistogramCell(const LayerReport& l) {
  if (!l.activation_histogram.has_value()) return "<td data-v=\"\"></td>";
  const ActivationHistogram& h = *l.activation_histogram;
  return absl::StrCat("<td data-v=\"", absl::StrFormat("%.17g", h.max - h.min),
                      "\">", HistogramSvg(h), "</td>");
}

std::vector<Column> Columns(bool sensitivity) {
  std::vector<Column> c = {
      {"#", "num", "2.5em", "order in the graph"},
      {"node", "text", "12%", "node name (full name on hover)"},
      {"op", "text", "6%", "ONNX op type"},
      {"op set", "text", "6%", "TPC op set the node matched"},
      {"fused group", "text", "7%", "fusing group (full name on hover)"},
      {"W bits", "num", "3.8em", "kernel weight bits"},
      {"W method", "text", "5.5em", "weights quantization method"},
      {"W thr", "num", "8%", "kernel thresholds over channels (min..max)"},
      {"A bits", "num", "3.8em", "output activation bits"},
      {"A method", "text", "5.5em", "activation quantization method"},
      {"A thr / range", "num", "7%",
       "activation threshold (&plusmn; signed) or range [min, max]"},
      {"scale", "num", "6.5em", "activation scale"},
      {"zp", "num", "3.5em", "activation zero point"},
      {"histogram", "num", "90px", "calibration histogram of the output"},
      {"SQNR", "num", "5.5em",
       "output SQNR vs float on the evaluation samples"},
  };
  if (sensitivity) {
    c.push_back({"only Q", "num", "5em",
                 "model output SQNR with only this node quantized"});
    c.push_back({"only F", "num", "5em",
                 "model output SQNR with only this node left float"});
  }
  c.push_back({"note", "text", "auto", "why (part of) the node stays float"});
  return c;
}

}  // namespace

std::string LayersTable(const ReportData& r) {
  const bool sensitivity =
      std::any_of(r.layers.begin(), r.layers.end(), [](const LayerReport& l) {
        return l.sqnr_only_quantized_db.has_value() ||
               l.sqnr_only_float_db.has_value();
      });
  const std::vector<Column> columns = Columns(sensitivity);
  std::string h = "<table id=\"layers\" class=\"layers sortable\">\n<colgroup>";
  for (const Column& c : columns) {
    absl::StrAppend(&h, "<col style=\"width:", c.width, "\">");
  }
  h += "</colgroup>\n<thead><tr>";
  for (const Column& c : columns) {
    absl::StrAppend(&h, "<th data-sort=\"", c.sort, "\" title=\"", c.tip, "\">",
                    c.label, "</th>");
  }
  h += "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerReport& l = r.layers[i];
    absl::StrAppend(&h, "<tr>", NumCell(absl::StrCat(i), i),
                    TextCell(l.node, 22), TextCell(l.op_type, 10),
                    TextCell(l.op_set, 10), TextCell(l.fused_group, 12),
                    BitsCell(l.weights_bits));
    absl::StrAppend(&h, MethodCell(l.weights_bits ? l.weights_method : ""),
                    WeightsThresholdCell(l), BitsCell(l.activation_bits),
                    MethodCell(l.activation_bits ? l.activation_method : ""),
                    ActivationRangeCell(l));
    if (l.activation_grid.has_value()) {
      absl::StrAppend(
          &h, NumCell(Num(l.activation_grid->scale), l.activation_grid->scale),
          NumCell(absl::StrCat(l.activation_grid->zero_point),
                  l.activation_grid->zero_point));
    } else {
      absl::StrAppend(&h, NumCell("&ndash;", {}), NumCell("&ndash;", {}));
    }
    absl::StrAppend(&h, HistogramCell(l), NumCell(Fmt(l.sqnr_db), l.sqnr_db));
    if (sensitivity) {
      absl::StrAppend(
          &h, NumCell(Fmt(l.sqnr_only_quantized_db), l.sqnr_only_quantized_db),
          NumCell(Fmt(l.sqnr_only_float_db), l.sqnr_only_float_db));
    }
    absl::StrAppend(&h, TextCell(l.float_reason, 40), "</tr>\n");
  }
  h += "</tbody></table>\n";
  return h;
}

}  // namespace quantd::report_internal
