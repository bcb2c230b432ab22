// The layers chart of report.html: layers along x (index as in the table),
// two panels stacked, each with its own title above it and ticked axes:
// bits (weights and activation bars side by side, 0..16) and SQNR against
// float (dB). The SVG has a viewBox and scales to the page's width; every
// layer's slot carries the full name and figures as a hover title.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/report/internal/html_util.h"
#include "core/report/report.h"

namespace quantd::report_internal {
namespace {

constexpr double kWidth = 1200, kLeft = 48, kRight = 12;
constexpr double kPlotW = kWidth - kLeft - kRight;
constexpr double kPanelH = 110;
constexpr double kBitsTop = 28, kSqnrTop = kBitsTop + kPanelH + 52;
constexpr double kHeight = kSqnrTop + kPanelH + 28;
constexpr const char* kWeightsColor = "#3b6fb6";
constexpr const char* kActivationColor = "#e08a2c";
constexpr const char* kSqnrColor = "#b63b3b";

// 1, 2, 5, 10, 20, 50, ...: the smallest such step with at most `max_ticks`
// ticks over `span`.
double NiceStep(double span, int max_ticks) {
  double step = 1;
  for (int i = 0; span / step > max_ticks; ++i) {
    step *= (i % 3 == 1) ? 2.5 : 2;  // 1, 2, 5, 10, 20, 50, ...
  }
  return step;
}

// Horizontal grid lines and y labels of a panel whose value `hi` is at
// `top` and `lo` at the panel's bottom.
void YAxis(double top, double lo, double hi, double step, const char* unit,
           std::string* svg) {
  for (double v = lo; v <= hi + 1e-9; v += step) {
    const double y = top + kPanelH - (v - lo) / (hi - lo) * kPanelH;
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">"
                          "%g%s</text>\n",
                          kLeft, kLeft + kPlotW, y, y, kLeft - 4, y + 4, v,
                          unit);
  }
  absl::StrAppendFormat(svg,
                        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"#888\"/>\n",
                        kLeft, kLeft, top, top + kPanelH);
}

// Layer-index ticks below a panel.
void XAxis(double top, int n, std::string* svg) {
  const double bottom = top + kPanelH;
  absl::StrAppendFormat(svg,
                        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"#888\"/>\n",
                        kLeft, kLeft + kPlotW, bottom, bottom);
  if (n == 0) return;
  const double slot = kPlotW / n;
  const int step = static_cast<int>(NiceStep(n, 20));
  for (int i = 0; i < n; i += step) {
    const double x = kLeft + (i + 0.5) * slot;
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#888\"/><text x=\"%.1f\" "
                          "y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
                          x, x, bottom, bottom + 4, x, bottom + 15, i);
  }
}

void Title(double y, const std::string& text, std::string* svg) {
  absl::StrAppendFormat(svg,
                        "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">%s"
                        "</text>\n",
                        kLeft, y, text);
}

std::string HoverText(const LayerReport& l, int i) {
  std::string t =
      absl::StrCat("#", i, " ", Escape(l.node), " (", Escape(l.op_type), ")");
  absl::StrAppend(
      &t, "\nweights: ",
      l.weights_bits ? absl::StrCat(l.weights_bits, " bit") : "float",
      ", activation: ",
      l.activation_bits ? absl::StrCat(l.activation_bits, " bit") : "float",
      "\nSQNR: ", Fmt(l.sqnr_db, " dB"));
  return t;
}

}  // namespace

std::string LayersChart(const ReportData& r) {
  const int n = static_cast<int>(r.layers.size());
  double max_sqnr = 10;
  for (const auto& l : r.layers) {
    if (l.sqnr_db && std::isfinite(*l.sqnr_db)) {
      max_sqnr = std::max(max_sqnr, *l.sqnr_db);
    }
  }
  const double sqnr_step = NiceStep(max_sqnr, 6);
  max_sqnr = std::ceil(max_sqnr / sqnr_step) * sqnr_step;
  std::string svg = absl::StrFormat(
      "<svg id=\"chart\" class=\"chart\" "
      "viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n",
      kWidth, kHeight);
  Title(kBitsTop - 12,
        absl::StrFormat("Bits per layer: <tspan fill=\"%s\">&#9632; "
                        "weights</tspan> <tspan fill=\"%s\">&#9632; "
                        "activation</tspan>",
                        kWeightsColor, kActivationColor),
        &svg);
  YAxis(kBitsTop, 0, 16, 4, "", &svg);
  XAxis(kBitsTop, n, &svg);
  Title(kSqnrTop - 12,
        absl::StrFormat("Output SQNR vs float per layer (dB; "
                        "<tspan fill=\"%s\">&#9679;</tspan> measured, "
                        "&#9675; exact)",
                        kSqnrColor),
        &svg);
  YAxis(kSqnrTop, 0, max_sqnr, sqnr_step, "", &svg);
  XAxis(kSqnrTop, n, &svg);
  const double slot = n > 0 ? kPlotW / n : kPlotW;
  const double bar = std::max(0.5, std::min(10.0, slot * 0.4));
  const double radius = std::max(1.2, std::min(4.0, slot * 0.35));
  const double unit = kPanelH / 16;
  for (int i = 0; i < n; ++i) {
    const LayerReport& l = r.layers[i];
    const double x = kLeft + i * slot, mid = x + slot / 2;
    absl::StrAppendFormat(&svg, "<g><title>%s</title>", HoverText(l, i));
    // The slot's hover area over both panels.
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                          "height=\"%.1f\" fill=\"transparent\"/>",
                          x, kBitsTop, slot, kSqnrTop + kPanelH - kBitsTop);
    if (l.weights_bits > 0) {
      const double h = std::min(16, l.weights_bits) * unit;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                            "height=\"%.2f\" fill=\"%s\"/>",
                            mid - bar, kBitsTop + kPanelH - h, bar, h,
                            kWeightsColor);
    }
    if (l.activation_bits > 0) {
      const double h = std::min(16, l.activation_bits) * unit;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                            "height=\"%.2f\" fill=\"%s\"/>",
                            mid, kBitsTop + kPanelH - h, bar, h,
                            kActivationColor);
    }
    if (l.sqnr_db.has_value() && !std::isnan(*l.sqnr_db)) {
      const bool exact = std::isinf(*l.sqnr_db);
      const double v = exact ? max_sqnr : std::clamp(*l.sqnr_db, 0.0, max_sqnr);
      absl::StrAppendFormat(
          &svg, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" %s/>", mid,
          kSqnrTop + kPanelH - v / max_sqnr * kPanelH, radius,
          exact ? absl::StrFormat("fill=\"none\" stroke=\"%s\"", kSqnrColor)
                : absl::StrFormat("fill=\"%s\"", kSqnrColor));
    }
    svg += "</g>\n";
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                        "fill=\"#666\">layer # (as in the table)</text>\n",
                        kLeft + kPlotW, kHeight - 2);
  svg += "</svg>\n";
  return svg;
}

}  // namespace quantd::report_internal
