// The report's details: coarse histograms, the options text and
// what the example CNN's job puts in report.json.
#include "core/pipeline/job/report_details.h"

#include <numeric>
#include <string>

#include "clients/batch/proto_output.h"
#include "core/graph/onnx_export.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/tpc/registry.h"
#include "core/util/sha256.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/example_model.h"

namespace quantd {
namespace {

TEST(CoarseHistogram, MergesEqualBinsByTheirCentre) {
  // 8 bins of width 1 over [0, 8] -> 2 bins of width 4: bins 0-3 and 4-7.
  quantizers::Histogram h;
  h.edges = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  h.counts = {1, 2, 3, 4, 5, 6, 7, 8.5};
  ActivationHistogram c = CoarseHistogram(h, 2);
  EXPECT_EQ(c.min, 0);
  EXPECT_EQ(c.max, 8);
  ASSERT_EQ(c.counts.size(), 2u);
  EXPECT_EQ(c.counts[0], 10);
  EXPECT_EQ(c.counts[1], 26.5);
}

TEST(CoarseHistogram, MalformedHistogramGivesNoBins) {
  quantizers::Histogram h;
  h.edges = {0, 1};
  h.counts = {1, 2};
  EXPECT_TRUE(CoarseHistogram(h, 32).counts.empty());
}

TEST(OptionsText, ListsOnlyTheSettingsGivenOneLineEach) {
  v1::QuantizeRequest r;
  EXPECT_EQ(OptionsText(r), "");
  r.mutable_quantization()->set_z_threshold(8);
  r.mutable_gptq()->set_enabled(true);
  r.set_num_threads(3);     // not a setting of the result
  r.set_report_samples(5);  // stated by the report's sample counts
  EXPECT_EQ(OptionsText(r),
            "quantization { z_threshold: 8 }\ngptq { enabled: true }");
}

TEST(ReportDetails, ExampleCnnReportNamesItsModelAndGrids) {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const auto& s : MakeExampleImages(16, 1)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.0");
  tpc::TpcRegistry registry;
  ASSERT_TRUE(registry.AddBuiltins().ok());
  JobContext ctx;
  ctx.registry = &registry;
  auto result = RunQuantizeJob(r, ctx);
  ASSERT_TRUE(result.ok()) << result.status();
  auto report = nlohmann::json::parse(result->report_json());
  EXPECT_EQ(report["model_sha256"], Sha256Hex(r.onnx_model()));
  EXPECT_EQ(report["quantd_version"], QuantdVersion());
  EXPECT_EQ(report["options"], "");
  const v1::QuantizedNode* relu1 = nullptr;
  for (const auto& n : result->quantized_graph().nodes()) {
    if (n.name() == "relu1") relu1 = &n;
  }
  ASSERT_NE(relu1, nullptr);
  ASSERT_EQ(relu1->activations_size(), 1);
  int seen = 0;
  for (const auto& l : report["layers"]) {
    if (l["node"] != "relu1") continue;
    ++seen;
    EXPECT_EQ(l["activation_grid"]["scale"].get<double>(),
              relu1->activations(0).scale());
    EXPECT_EQ(l["activation_grid"]["threshold"].get<double>(),
              relu1->activations(0).threshold());
    // relu1's output is [1, 8, 16, 16] (3x3 conv, pads 1): 2048 values a
    // sample, 16 samples, every value in one of the 32 bins.
    const auto counts = l["activation_histogram"]["counts"];
    ASSERT_EQ(counts.size(), 32u);
    double total = 0;
    for (const auto& c : counts) total += c.get<double>();
    EXPECT_NEAR(total, 16 * 2048, 1e-6);
    EXPECT_EQ(l["activation_histogram"]["min"].get<double>(), 0.0);
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace quantd
