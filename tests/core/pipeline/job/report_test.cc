// report.json keys (DESIGN.md) and report.html self-containment.
#include "core/report/report.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace quantd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ReportData Sample() {
  ReportData r;
  r.model_name = "tiny<cnn>";
  r.tpc = "imx500@4.1";
  r.resource_utilization.weights_memory_bytes = 1000;
  r.baseline_8bit.weights_memory_bytes = 1000;
  LayerReport l;
  l.node = "conv_0";
  l.op_type = "Conv";
  l.op_set = "Conv";
  l.weights_bits = 8;
  l.activation_bits = 8;
  l.weights_method = "SYMMETRIC";
  l.activation_method = "POWER_OF_TWO";
  l.sqnr_db = 35.5;
  r.layers.push_back(l);
  LayerReport exact = l;
  exact.node = "reshape";
  exact.sqnr_db = std::numeric_limits<double>::infinity();
  r.layers.push_back(exact);
  r.output_sqnr_db = 30.25;
  r.timings_seconds = {{"import", 0.5}, {"calibrate", 1.5}};
  return r;
}

TEST(ReportJson, HasEveryKeyDesignMdLists) {
  auto j = nlohmann::json::parse(ReportToJson(Sample()));
  for (const char* key : {"resource_utilization", "baseline_8bit", "targets",
                          "layers", "output_sqnr_db", "timings_seconds"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"weights_memory_bytes", "activation_memory_bytes",
                          "total_memory_bytes", "bops"}) {
    EXPECT_TRUE(j["targets"].contains(key)) << key;
    EXPECT_TRUE(j["resource_utilization"].contains(key)) << key;
    EXPECT_TRUE(j["baseline_8bit"].contains(key)) << key;
  }
  for (const char* key :
       {"node", "op_type", "op_set", "weights_bits", "activation_bits",
        "weights_method", "activation_method", "sqnr_db"}) {
    EXPECT_TRUE(j["layers"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["layers"][0]["sqnr_db"].get<double>(), 35.5);
  EXPECT_EQ(j["timings_seconds"]["total"].get<double>(), 2.0);
}

TEST(ReportJson, InfiniteSqnrIsNull) {
  auto j = nlohmann::json::parse(ReportToJson(Sample()));
  EXPECT_TRUE(j["layers"][1]["sqnr_db"].is_null());
}

TEST(ReportJson, WithoutTimingsIsIndependentOfTheClock) {
  ReportData a = Sample(), b = Sample();
  b.timings_seconds = {{"import", 9.0}};
  EXPECT_EQ(ReportToJson(a, false), ReportToJson(b, false));
  EXPECT_THAT(ReportToJson(a, false), Not(HasSubstr("timings_seconds")));
}

TEST(ReportJson, SensitivityListsAnalysedLayersMostSensitiveFirst) {
  ReportData r = Sample();
  r.layers[0].sqnr_only_quantized_db = 40.0;
  r.layers[0].sqnr_only_float_db = 20.0;
  r.layers[1].sqnr_only_quantized_db = 12.5;
  r.layers[1].sqnr_only_float_db = 30.0;
  LayerReport exact = r.layers[0];
  exact.node = "exact";
  exact.sqnr_only_quantized_db = std::numeric_limits<double>::infinity();
  exact.sqnr_only_float_db = 19.0;
  r.layers.insert(r.layers.begin(), exact);
  LayerReport unanalysed = r.layers[1];
  unanalysed.node = "float_node";
  unanalysed.sqnr_only_quantized_db.reset();
  unanalysed.sqnr_only_float_db.reset();
  r.layers.push_back(unanalysed);
  auto j = nlohmann::json::parse(ReportToJson(r));
  ASSERT_EQ(j["sensitivity"].size(), 3u);
  EXPECT_EQ(j["sensitivity"][0]["node"], "reshape");
  EXPECT_EQ(j["sensitivity"][0]["sqnr_only_quantized_db"].get<double>(), 12.5);
  EXPECT_EQ(j["sensitivity"][0]["sqnr_only_float_db"].get<double>(), 30.0);
  EXPECT_EQ(j["sensitivity"][1]["node"], "conv_0");
  EXPECT_EQ(j["sensitivity"][2]["node"], "exact");
  EXPECT_TRUE(j["sensitivity"][2]["sqnr_only_quantized_db"].is_null());
}

TEST(ReportJson, NoSensitivityKeyWithoutTheAnalysis) {
  EXPECT_THAT(ReportToJson(Sample()), Not(HasSubstr("sensitivity")));
}

TEST(ReportHtml, IsSelfContainedAndEscaped) {
  std::string html = ReportToHtml(Sample());
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("tiny&lt;cnn&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("http:")));
  EXPECT_THAT(html, Not(HasSubstr("https:")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
}

// The text between the first `open` and the next `close` after it.
std::string Between(const std::string& s, const std::string& open,
                    const std::string& close) {
  const size_t b = s.find(open);
  if (b == std::string::npos) return "";
  const size_t e = s.find(close, b + open.size());
  return s.substr(b + open.size(),
                  e == std::string::npos ? e : e - b - open.size());
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos;
       p = s.find(what, p + what.size())) {
    ++n;
  }
  return n;
}

ReportData ManyLayers(int n) {
  ReportData r = Sample();
  r.layers.clear();
  for (int i = 0; i < n; ++i) {
    LayerReport l = Sample().layers[0];
    l.node = absl::StrCat("conv_", i);
    r.layers.push_back(l);
  }
  return r;
}

TEST(ReportHtml, HasOneTableRowPerLayer) {
  const std::string body =
      Between(ReportToHtml(ManyLayers(200)), "<tbody>", "</tbody>");
  EXPECT_EQ(Count(body, "<tr>"), 200);
  EXPECT_THAT(body, HasSubstr(">conv_199<"));
}

TEST(ReportHtml, CutsALongNameAndKeepsItWholeInTheTitle) {
  ReportData r = Sample();
  const std::string group(110, 'g');
  r.layers[0].fused_group = group + "_end";
  const std::string table = Between(ReportToHtml(r), "<tbody>", "</tbody>");
  EXPECT_THAT(table, HasSubstr(absl::StrCat("title=\"", group, "_end\"")));
  // Shown: 12 characters, 6 + an ellipsis + the last 5.
  EXPECT_THAT(table, HasSubstr(">gggggg\xE2\x80\xA6g_end</span>"));
}

TEST(ReportHtml, EveryLayerHeaderIsSortable) {
  const std::string head =
      Between(ReportToHtml(Sample()), "<table id=\"layers\"", "</thead>");
  const int headers = Count(head, "<th ");
  EXPECT_GE(headers, 15);
  EXPECT_EQ(Count(head, "<th data-sort=\""), headers);
  EXPECT_THAT(ReportToHtml(Sample()), HasSubstr("<script>"));
}

TEST(ReportHtml, NumericCellsCarryTheirSortKey) {
  const std::string body =
      Between(ReportToHtml(Sample()), "<tbody>", "</tbody>");
  EXPECT_THAT(body, HasSubstr("<td data-v=\"35.5\">35.50</td>"));
  // An exact (infinite) SQNR sorts above every measured one.
  EXPECT_THAT(body, HasSubstr("<td data-v=\"1e308\">exact</td>"));
}

TEST(ReportHtml, ShowsTheActivationGridAndHistogram) {
  ReportData r = Sample();
  ActivationGrid g;
  g.threshold = 4;
  g.is_signed = true;
  g.scale = 0.03125;  // 4 / 2^7
  g.zero_point = 0;
  r.layers[0].activation_grid = g;
  r.layers[0].activation_histogram = ActivationHistogram{-4, 4, {1, 0, 3}};
  r.layers[0].weights_threshold_min = 0.5;
  r.layers[0].weights_threshold_max = 2;
  const std::string body = Between(ReportToHtml(r), "<tbody>", "</tbody>");
  EXPECT_THAT(body, HasSubstr(">&plusmn;4</td>"));
  EXPECT_THAT(body, HasSubstr(">0.03125</td>"));
  EXPECT_THAT(body, HasSubstr("<span title=\"0.5 .. 2\">0.5&hellip;2</span>"));
  EXPECT_THAT(body, HasSubstr("<svg class=\"hist\""));
  EXPECT_THAT(body, HasSubstr("<title>-4 .. 4 ("));
}

TEST(ReportHtml, ShowsSensitivityColumnsOnlyWhenMeasured) {
  EXPECT_THAT(ReportToHtml(Sample()), Not(HasSubstr(">only Q</th>")));
  ReportData r = Sample();
  r.layers[0].sqnr_only_quantized_db = 41.25;
  r.layers[0].sqnr_only_float_db = 29.5;
  const std::string html = ReportToHtml(r);
  EXPECT_THAT(html, HasSubstr(">only Q</th>"));
  EXPECT_THAT(html, HasSubstr(">only F</th>"));
  EXPECT_THAT(html, HasSubstr(">41.25</td>"));
  EXPECT_THAT(html, HasSubstr(">29.50</td>"));
}

TEST(ReportHtml, NamesTheModelDigestVersionAndOptions) {
  ReportData r = Sample();
  r.model_sha256 = std::string(64, 'a');
  r.quantd_version = "9.8.7";
  r.options = "gptq { enabled: true }";
  const std::string html = ReportToHtml(r);
  EXPECT_THAT(html, HasSubstr(r.model_sha256));
  EXPECT_THAT(html, HasSubstr(">9.8.7<"));
  EXPECT_THAT(html, HasSubstr("gptq { enabled: true }"));
}

TEST(ReportHtml, ChartHasTicksAndSeparateTitles) {
  const std::string chart =
      Between(ReportToHtml(ManyLayers(200)), "<svg id=\"chart\"", "</svg>");
  EXPECT_THAT(chart, HasSubstr("viewBox="));
  EXPECT_EQ(Count(chart, "font-weight=\"bold\""), 2);
  // x ticks every 10 layers (200 layers, at most 20 ticks), in both panels.
  EXPECT_EQ(Count(chart, "text-anchor=\"middle\">190<"), 2);
  // Bits ticks 0, 4, 8, 12, 16.
  EXPECT_THAT(chart, HasSubstr(">16</text>"));
}

TEST(ReportJson, AddsTheDetailsKeys) {
  ReportData r = Sample();
  r.model_sha256 = "abc";
  r.quantd_version = "1.2.3";
  ActivationGrid g;
  g.range_min = -1;
  g.range_max = 3;
  g.scale = 4.0 / 255;
  g.zero_point = 64;
  r.layers[0].activation_grid = g;
  r.layers[0].activation_histogram = ActivationHistogram{-1, 3, {2, 5}};
  auto j = nlohmann::json::parse(ReportToJson(r));
  EXPECT_EQ(j["model_sha256"], "abc");
  EXPECT_EQ(j["quantd_version"], "1.2.3");
  EXPECT_EQ(j["options"], "");
  EXPECT_EQ(j["layers"][0]["activation_grid"]["zero_point"], 64);
  EXPECT_EQ(j["layers"][0]["activation_grid"]["range_max"], 3.0);
  EXPECT_FALSE(j["layers"][0]["activation_grid"].contains("threshold"));
  EXPECT_EQ(j["layers"][0]["activation_histogram"]["counts"][1], 5.0);
  EXPECT_FALSE(j["layers"][1].contains("activation_grid"));
}

}  // namespace
}  // namespace quantd
