// The pieces of report.html and the text helpers its files share
// (report_html.cc, report_html_chart.cc, report_html_table.cc).
#ifndef QUANTD_CORE_REPORT_INTERNAL_HTML_UTIL_H_
#define QUANTD_CORE_REPORT_INTERNAL_HTML_UTIL_H_

#include <optional>
#include <string>

#include "core/report/report.h"

namespace quantd::report_internal {

// HTML-escaped text (also safe inside double- or single-quoted attributes).
std::string Escape(const std::string& s);

// "12.34 dB"; "exact" for +inf; an en dash when unset or NaN.
std::string Fmt(const std::optional<double>& v, const char* unit = "");

// A compact number for thresholds and scales: 4 significant digits.
std::string Num(double v);

// `name` cut in the middle to at most `max_chars` characters (UTF-8 safe),
// "conv_…_relu", so that the distinguishing end stays visible.
std::string ShortName(const std::string& name, size_t max_chars);

// <span title="full name">short name</span> (a plain span when it fits).
std::string NameCell(const std::string& name, size_t max_chars);

// The layers chart: bits and SQNR per layer, inline SVG that scales to the
// page's width.
std::string LayersChart(const ReportData& r);

// The sortable per-layer table (<table id="layers">).
std::string LayersTable(const ReportData& r);

// A 32-bar histogram as a small inline SVG.
std::string HistogramSvg(const ActivationHistogram& h);

}  // namespace quantd::report_internal

#endif  // QUANTD_CORE_REPORT_INTERNAL_HTML_UTIL_H_
