#include "core/report/internal/html_util.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace quantd::report_internal {

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

std::string Fmt(const std::optional<double>& v, const char* unit) {
  if (!v.has_value()) return "&ndash;";
  if (!std::isfinite(*v)) return *v > 0 ? "exact" : "&ndash;";
  return absl::StrFormat("%.2f%s", *v, unit);
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "&ndash;";
  return absl::StrFormat("%.4g", v);
}

namespace {

// Characters (code points) of UTF-8 text: the byte offset of each.
std::vector<size_t> CodePointStarts(const std::string& s) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  return starts;
}

}  // namespace

std::string ShortName(const std::string& name, size_t max_chars) {
  const std::vector<size_t> starts = CodePointStarts(name);
  if (starts.size() <= max_chars || max_chars < 3) return name;
  const size_t keep = max_chars - 1;  // one for the ellipsis
  const size_t head = (keep + 1) / 2, tail = keep - head;
  return absl::StrCat(name.substr(0, starts[head]), "\xE2\x80\xA6",
                      name.substr(starts[starts.size() - tail]));
}

std::string NameCell(const std::string& name, size_t max_chars) {
  const std::string shown = ShortName(name, max_chars);
  return absl::StrCat("<span title=\"", Escape(name), "\">", Escape(shown),
                      "</span>");
}

std::string HistogramSvg(const ActivationHistogram& h) {
  constexpr int kW = 64, kH = 16;
  double top = 0;
  for (double c : h.counts) top = std::max(top, c);
  const int n = static_cast<int>(h.counts.size());
  std::string path;
  if (top > 0 && n > 0) {
    const double w = static_cast<double>(kW) / n;
    for (int i = 0; i < n; ++i) {
      if (h.counts[i] <= 0) continue;
      // Square-root heights: a spike (ReLU's zeros) leaves the rest
      // visible; at least a pixel, so that a lone bin shows.
      const double bar = std::max(1.0, std::sqrt(h.counts[i] / top) * kH);
      absl::StrAppendFormat(&path, "M%.1f %dv%.1fh%.1fv%.1fz", i * w, kH, -bar,
                            w, bar);
    }
  }
  return absl::StrFormat(
      "<svg class=\"hist\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">"
      "<title>%s .. %s (bar height: square root of the count)</title><path "
      "d=\"%s\" fill=\"#6a8caf\"/></svg>",
      kW, kH, kW, kH, Num(h.min), Num(h.max), path);
}

}  // namespace quantd::report_internal
