// GPTQ time per model against PTQ time, same request and pool (`--threads`,
// default 1; `--threads 2` is a pool of one worker plus the caller): W4A8 with
// imx500@4.1 and the default GptqConfig (5 epochs of 4096 sampled positions per
// block, 128 per step). Prints per model the PTQ and GPTQ job times (wall),
// their ratio, both held-out output SQNRs, and the gptq stage alone in wall and
// process CPU seconds, whole and per epoch, and a digest of the GPTQ job's
// report without its timings (changes with any bit of a trained weight or a
// block's figures).
// `--mobilenet FILE` adds that model with seeded random 224x224 inputs
// (`--samples` calibration, 16 held out; timing only).
//
//   gptq_bench [--cache DIR] [--models ppocr_cls,oww_embedding]
//              [--samples N] [--epochs N] [--mobilenet FILE] [--threads N]

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "nlohmann/json.hpp"

namespace quantd {
namespace {

// `count` samples of the model's single input, uniform in [-1, 1], seeded.
bool RandomInputs(const Model& model, int count, uint64_t seed,
                  std::vector<SampleFeeds>* out) {
  if (model.graph.inputs.size() != 1) return false;
  const ValueInfo& in = model.graph.inputs[0];
  std::vector<int64_t> shape = in.shape;
  for (int64_t& d : shape) d = d > 0 ? d : 1;
  uint64_t state = seed;
  for (int i = 0; i < count; ++i) {
    Tensor t(DType::kFloat, shape);
    for (float& v : t.mutable_span<float>()) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<float>((state >> 40) * (2.0 / (1 << 24)) - 1.0);
    }
    out->push_back({{in.name, std::move(t)}});
  }
  return true;
}

struct BenchCase {
  std::string name;
  std::string bytes;
  std::vector<SampleFeeds> calib, held;
};

// The PTQ and GPTQ jobs of one case; prints one row.
void RunCase(const BenchCase& c, int samples, int epochs, int threads,
             tpc::TpcRegistry* registry) {
  v1::QuantizeRequest r;
  r.set_onnx_model(c.bytes);
  for (size_t i = 0; i < c.calib.size() && static_cast<int>(i) < samples; ++i) {
    v1::Sample* s = r.add_calibration_samples();
    for (const auto& [n, t] : c.calib[i]) {
      *s->add_inputs() = TensorToSampleProto(t, n);
    }
  }
  for (const auto& sample : c.held) {
    v1::Sample* s = r.add_evaluation_samples();
    for (const auto& [n, t] : sample) {
      *s->add_inputs() = TensorToSampleProto(t, n);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.1");
  r.mutable_mixed_precision()->set_kernel_weights_bits(4);
  r.mutable_export_options()->set_skip_qdq_onnx(true);
  ThreadPool pool(threads - 1);
  JobContext ctx;
  ctx.registry = registry;
  ctx.pool = &pool;
  double seconds[2] = {0, 0}, sqnr[2] = {0, 0}, stage = 0, stage_cpu = 0;
  uint64_t digest = 0;
  for (int gptq = 0; gptq < 2; ++gptq) {
    r.mutable_gptq()->set_enabled(gptq == 1);
    if (epochs > 0) r.mutable_gptq()->set_n_epochs(epochs);
    double stage_cpu_start = 0;
    ctx.on_stage_start = [&](const std::string& s) {
      if (s == "gptq") stage_cpu_start = bench::ProcessCpuSeconds();
      if (stage_cpu_start > 0 && stage_cpu == 0 && s != "gptq") {
        stage_cpu = bench::ProcessCpuSeconds() - stage_cpu_start;
      }
      return absl::OkStatus();
    };
    const absl::Time start = absl::Now();
    auto result = RunQuantizeJob(r, ctx);
    seconds[gptq] = absl::ToDoubleSeconds(absl::Now() - start);
    if (!result.ok()) {
      std::printf("%-16s failed: %s\n", c.name.c_str(),
                  std::string(result.status().message()).c_str());
      return;
    }
    sqnr[gptq] = result->output_sqnr_db();
    if (gptq == 1) {
      auto t = nlohmann::json::parse(result->report_json())["timings_seconds"];
      if (t.contains("gptq")) stage = t["gptq"].get<double>();
      digest = bench::ReportDigest(result->report_json());
    }
  }
  const int n_epochs = epochs > 0 ? epochs : 5;  // GptqOptions' default
  std::printf(
      "%-16s %8.2f %8.2f %6.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %016llx\n",
      c.name.c_str(), seconds[0], seconds[1], seconds[1] / seconds[0], sqnr[0],
      sqnr[1], stage, stage_cpu, stage / n_epochs, stage_cpu / n_epochs,
      static_cast<unsigned long long>(digest));
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  std::string cache = ".cache", mobilenet;
  std::vector<std::string> models = {"ppocr_cls", "oww_embedding"};
  int samples = 16, epochs = 0, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--cache") {
      cache = value;
    } else if (flag == "--models") {
      models = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (flag == "--mobilenet") {
      mobilenet = value;
    } else if (flag == "--samples" && absl::SimpleAtoi(value, &samples)) {
    } else if (flag == "--epochs" && absl::SimpleAtoi(value, &epochs)) {
    } else if (flag == "--threads" && absl::SimpleAtoi(value, &threads) &&
               threads > 0) {
    } else {
      std::fprintf(stderr, "gptq_bench: bad flag %s %s\n", flag.c_str(),
                   value.c_str());
      return 2;
    }
  }
  tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  std::printf("%-16s %8s %8s %6s %8s %8s %8s %8s %8s %8s %s\n", "model",
              "ptq_s", "gptq_s", "ratio", "ptq_dB", "gptq_dB", "stage_s",
              "stage_cpu", "epoch_s", "epoch_cpu", "report");
  for (const std::string& name : models) {
    BenchCase c{name, "", {}, {}};
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
    c.bytes = *std::move(bytes);
    c.calib = std::move(calib->samples);
    c.held = std::move(held->samples);
    RunCase(c, samples, epochs, threads, &registry);
  }
  if (!mobilenet.empty()) {
    BenchCase c{"mobilenet_v2", "", {}, {}};
    auto bytes = ReadFileLimited(mobilenet, int64_t{1} << 30);
    auto model = bytes.ok() ? ImportOnnx(*bytes) : bytes.status();
    if (!model.ok() ||
        !RandomInputs(*model, samples, 0x9e3779b97f4a7c15ull, &c.calib) ||
        !RandomInputs(*model, 16, 0x5851f42d4c957f2dull, &c.held)) {
      std::printf("mobilenet_v2     cannot load %s\n", mobilenet.c_str());
      return 0;
    }
    c.bytes = *std::move(bytes);
    RunCase(c, samples, epochs, threads, &registry);
  }
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Main(argc, argv); }
