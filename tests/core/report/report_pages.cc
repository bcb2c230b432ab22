// Writes the report.html pages the Chromium test (report_html_chromium_test.py)
// lays out: the example CNN's real report (the whole job, in process) and a
// synthetic worst case, 200 layers in a 110-character fused group.
//   report_pages OUT_DIR  ->  OUT_DIR/example_cnn.html, OUT_DIR/wide.html
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/batch/proto_output.h"
#include "core/graph/onnx_export.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/report/report.h"
#include "core/tpc/registry.h"
#include "tests/testing/example_model.h"

namespace quantd {
namespace {

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

std::string ExampleCnnReport() {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const auto& s : MakeExampleImages(8, 1)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.1");
  r.mutable_quantization()->set_z_threshold(8);
  tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return "";
  JobContext ctx;
  ctx.registry = &registry;
  auto result = RunQuantizeJob(r, ctx);
  if (!result.ok()) {
    std::fprintf(stderr, "example CNN job: %s\n",
                 std::string(result.status().message()).c_str());
    return "";
  }
  return result->report_html();
}

// 200 layers in one fused group with a 110-character name, long node names,
// every column filled (sensitivity included), SQNR falling with depth.
ReportData WideReport() {
  ReportData r;
  r.model_name = "wide_synthetic_model";
  r.model_sha256 = std::string(64, 'f');
  r.quantd_version = QuantdVersion();
  r.tpc = "imx500@4.1";
  r.tpc_digest = std::string(64, 'e');
  r.options =
      "quantization { z_threshold: 8 shift_negative_params_search: true }";
  const std::string group(110, 'g');
  for (int i = 0; i < 200; ++i) {
    LayerReport l;
    l.node = absl::StrCat("backbone/stage_", i / 10, "/block_", i,
                          "/conv_bn_relu_fused_with_a_long_suffix");
    l.op_type = i % 3 == 0 ? "ConvTranspose" : "Conv";
    l.op_set = "ConvWithActivation";
    l.fused_group = group;
    l.weights_bits = i % 4 == 0 ? 4 : 8;
    l.activation_bits = 8;
    l.weights_method = "SYMMETRIC";
    l.activation_method = "POWER_OF_TWO";
    l.sqnr_db = 45.0 - i * 0.1;
    l.sqnr_only_quantized_db = 50.0 - i * 0.05;
    l.sqnr_only_float_db = 30.0 + i * 0.01;
    l.float_reason = i % 7 == 0 ? "bias stays float: no TPC attribute" : "";
    ActivationGrid g;
    g.threshold = 8.0;
    g.is_signed = true;
    g.scale = 8.0 / 128;
    r.layers.push_back(l);
    r.layers.back().activation_grid = g;
    r.layers.back().weights_threshold_min = 0.0123456;
    r.layers.back().weights_threshold_max = 1.23456;
    ActivationHistogram h{-7.9, 7.9, std::vector<double>(32, 0.0)};
    for (int b = 0; b < 32; ++b) h.counts[b] = (b - 16) * (16 - b) + 300;
    r.layers.back().activation_histogram = h;
  }
  r.output_sqnr_db = 25.0;
  return r;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: report_pages OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::string example = quantd::ExampleCnnReport();
  if (example.empty()) return 1;
  if (!quantd::Write(dir + "/example_cnn.html", example) ||
      !quantd::Write(dir + "/wide.html",
                     quantd::ReportToHtml(quantd::WideReport()))) {
    std::fprintf(stderr, "cannot write to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
