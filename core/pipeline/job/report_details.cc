#include "core/pipeline/job/report_details.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/tpc/attribute_names.h"
#include "google/protobuf/text_format.h"

namespace quantd {
namespace {

std::string OneLine(const google::protobuf::Message& message) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string text;
  printer.PrintToString(message, &text);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

ActivationGrid GridOf(const v1::ActivationQuantization& a) {
  ActivationGrid g;
  switch (a.method()) {
    case v1::QUANTIZATION_METHOD_UNIFORM:
      g.range_min = a.range_min();
      g.range_max = a.range_max();
      break;
    default:
      g.threshold = a.threshold();
  }
  g.scale = a.scale();
  g.zero_point = a.zero_point();
  g.is_signed = a.is_signed();
  return g;
}

// The kernel's per-channel thresholds (range ends for UNIFORM): min, max.
std::optional<std::pair<double, double>> KernelSpan(
    const v1::QuantizedNode& n) {
  for (const v1::WeightQuantization& w : n.weights()) {
    if (w.attr() != tpc::kKernelAttr) continue;
    std::vector<double> v(w.thresholds().begin(), w.thresholds().end());
    if (v.empty()) {
      for (int i = 0; i < w.range_max_size(); ++i) {
        const double lo = i < w.range_min_size() ? w.range_min(i) : 0;
        v.push_back(std::max(std::abs(lo), std::abs(w.range_max(i))));
      }
    }
    if (v.empty()) return std::nullopt;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return std::make_pair(*lo, *hi);
  }
  return std::nullopt;
}

}  // namespace

ActivationHistogram CoarseHistogram(const quantizers::Histogram& histogram,
                                    int bins) {
  ActivationHistogram out;
  out.counts.assign(bins, 0.0);
  const auto& edges = histogram.edges;
  const auto& counts = histogram.counts;
  if (edges.size() != counts.size() + 1 || counts.empty() || bins <= 0) {
    out.counts.clear();
    return out;
  }
  out.min = edges.front();
  out.max = edges.back();
  const double width = out.max - out.min;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double centre = 0.5 * (edges[i] + edges[i + 1]);
    int b = width > 0 ? static_cast<int>((centre - out.min) / width * bins) : 0;
    b = std::clamp(b, 0, bins - 1);
    out.counts[b] += counts[i];
  }
  return out;
}

std::string OptionsText(const v1::QuantizeRequest& request) {
  std::string text;
  auto add = [&text](const char* name, const google::protobuf::Message& m) {
    if (m.ByteSizeLong() == 0) return;
    absl::StrAppend(&text, text.empty() ? "" : "\n", name, " { ", OneLine(m),
                    " }");
  };
  add("quantization", request.quantization());
  add("mixed_precision", request.mixed_precision());
  add("gptq", request.gptq());
  add("export_options", request.export_options());
  return text;
}

void AddReportDetails(const JobState& state, const v1::QuantizedGraph& qg,
                      const std::string& options_text,
                      const std::string& model_sha256, ReportData* report) {
  report->model_sha256 = model_sha256;
  report->quantd_version = QuantdVersion();
  report->options = options_text;
  std::map<std::string, const v1::QuantizedNode*> nodes;
  for (const v1::QuantizedNode& n : qg.nodes()) nodes[n.name()] = &n;
  for (LayerReport& l : report->layers) {
    auto it = nodes.find(l.node);
    if (it == nodes.end()) continue;
    const v1::QuantizedNode& n = *it->second;
    if (auto span = KernelSpan(n); span.has_value() && n.weights_bits() > 0) {
      l.weights_threshold_min = span->first;
      l.weights_threshold_max = span->second;
    }
    if (n.activations_size() == 0) continue;
    const v1::ActivationQuantization& a = n.activations(0);
    l.activation_grid = GridOf(a);
    auto stats = state.stats.find(a.tensor());
    if (stats != state.stats.end()) {
      ActivationHistogram h =
          CoarseHistogram(stats->second.histogram, kReportHistogramBins);
      if (!h.counts.empty()) l.activation_histogram = std::move(h);
    }
  }
}

}  // namespace quantd
