// GPTQ time per model against PTQ time, same request and pool (one
// thread): W4A8 with imx500@4.1 and the default GptqConfig (5 epochs of 4096
// sampled positions per block, 128 per step). Prints per model the PTQ and
// GPTQ job times, their ratio and both held-out output SQNRs.
//
//   gptq_bench [--cache DIR] [--models ppocr_cls,oww_embedding]
//              [--samples N] [--epochs N]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"

namespace quantd {
namespace {

int Main(int argc, char** argv) {
  std::string cache = ".cache";
  std::vector<std::string> models = {"ppocr_cls", "oww_embedding"};
  int samples = 16, epochs = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--cache") {
      cache = value;
    } else if (flag == "--models") {
      models = absl::StrSplit(value, ',');
    } else if (flag == "--samples" && absl::SimpleAtoi(value, &samples)) {
    } else if (flag == "--epochs" && absl::SimpleAtoi(value, &epochs)) {
    } else {
      std::fprintf(stderr, "gptq_bench: bad flag %s %s\n", flag.c_str(),
                   value.c_str());
      return 2;
    }
  }
  tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  std::printf("%-16s %10s %10s %8s %10s %10s\n", "model", "ptq_s", "gptq_s",
              "ratio", "ptq_dB", "gptq_dB");
  for (const std::string& name : models) {
    auto bytes =
        ReadFileLimited(cache + "/models/" + name + ".onnx", int64_t{1} << 30);
    if (!bytes.ok()) {
      std::printf("%-16s missing (%s)\n", name.c_str(),
                  std::string(bytes.status().message()).c_str());
      continue;
    }
    auto model = ImportOnnx(*bytes);
    if (!model.ok()) return 1;
    std::vector<std::string> inputs;
    for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
    auto calib = ReadSampleSet(cache + "/samples/" + name + "/calib", inputs);
    auto held = ReadSampleSet(cache + "/samples/" + name + "/heldout", inputs);
    if (!calib.ok() || !held.ok()) {
      std::printf("%-16s samples missing\n", name.c_str());
      continue;
    }
    v1::QuantizeRequest r;
    r.set_onnx_model(*bytes);
    for (size_t i = 0;
         i < calib->samples.size() && static_cast<int>(i) < samples; ++i) {
      v1::Sample* s = r.add_calibration_samples();
      for (const auto& [n, t] : calib->samples[i]) {
        *s->add_inputs() = TensorToSampleProto(t, n);
      }
    }
    for (const auto& sample : held->samples) {
      v1::Sample* s = r.add_evaluation_samples();
      for (const auto& [n, t] : sample) {
        *s->add_inputs() = TensorToSampleProto(t, n);
      }
    }
    r.mutable_tpc()->set_name("imx500@4.1");
    r.mutable_mixed_precision()->set_kernel_weights_bits(4);
    r.mutable_export_options()->set_skip_qdq_onnx(true);
    ThreadPool pool(1);
    JobContext ctx;
    ctx.registry = &registry;
    ctx.pool = &pool;
    double seconds[2] = {0, 0}, sqnr[2] = {0, 0};
    for (int gptq = 0; gptq < 2; ++gptq) {
      r.mutable_gptq()->set_enabled(gptq == 1);
      if (epochs > 0) r.mutable_gptq()->set_n_epochs(epochs);
      const absl::Time start = absl::Now();
      auto result = RunQuantizeJob(r, ctx);
      seconds[gptq] = absl::ToDoubleSeconds(absl::Now() - start);
      if (!result.ok()) {
        std::printf("%-16s failed: %s\n", name.c_str(),
                    std::string(result.status().message()).c_str());
        break;
      }
      sqnr[gptq] = result->output_sqnr_db();
    }
    std::printf("%-16s %10.2f %10.2f %8.1f %10.2f %10.2f\n", name.c_str(),
                seconds[0], seconds[1], seconds[1] / seconds[0], sqnr[0],
                sqnr[1]);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Main(argc, argv); }
