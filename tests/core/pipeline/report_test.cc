// report.json keys (DESIGN.md) and report.html self-containment.
#include "core/report/report.h"

#include <limits>
#include <string>

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
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=\"http")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
}

}  // namespace
}  // namespace quantd
