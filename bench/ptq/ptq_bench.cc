// ptq_bench [--threads N] [--models DIR] [--samples DIR] [--mobilenet FILE]
// [--only MODEL]:
// time of the whole PTQ job (W8A8, imx500@4.1 default TPC) per model and per
// stage, for the bundled example CNN, the real models of
// scripts/fetch_models.sh when they are present (.cache/models,
// .cache/samples) and the shared MobileNetV2 (64 random 224x224 samples,
// untrained weights: timing only). Prints one table row per model and stage,
// and the share of the job each stage takes. MobileNetV2 runs twice: the
// report on the default 16 samples and on all 64 (report_samples = -1, the
// behaviour before session 5); the ratio is printed. Its first run also
// times a plain float pass over the same samples and prints what the
// calibrate stage's observers cost as a share of it (observer_cost.h).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/ptq/observer_cost.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "nlohmann/json.hpp"
#include "tests/testing/example_model.h"

namespace {

struct Case {
  std::string name;
  std::string model_bytes;
  std::vector<quantd::SampleFeeds> calib;
};

void AddSamples(const std::vector<quantd::SampleFeeds>& samples,
                google::protobuf::RepeatedPtrField<quantd::v1::Sample>* out) {
  for (const auto& s : samples) {
    auto* p = out->Add();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = quantd::TensorToSampleProto(t, name);
    }
  }
}

bool LoadReal(const std::string& models, const std::string& samples,
              const std::string& name, Case* c) {
  auto bytes =
      quantd::ReadFileLimited(models + "/" + name + ".onnx", int64_t{1} << 31);
  if (!bytes.ok()) return false;
  auto model = quantd::ImportOnnx(*bytes);
  if (!model.ok()) return false;
  std::vector<std::string> inputs;
  for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
  auto set = quantd::ReadSampleSet(samples + "/" + name + "/calib", inputs);
  if (!set.ok()) return false;
  c->name = name;
  c->model_bytes = *std::move(bytes);
  c->calib = std::move(set->samples);
  return true;
}

// `count` samples of the model's single input, uniform in [-1, 1], seeded.
bool LoadRandomInputs(const std::string& path, const std::string& name,
                      int count, Case* c) {
  auto bytes = quantd::ReadFileLimited(path, int64_t{1} << 31);
  if (!bytes.ok()) return false;
  auto model = quantd::ImportOnnx(*bytes);
  if (!model.ok() || model->graph.inputs.size() != 1) return false;
  const quantd::ValueInfo& in = model->graph.inputs[0];
  std::vector<int64_t> shape = in.shape;
  for (int64_t& d : shape) d = d > 0 ? d : 1;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < count; ++i) {
    quantd::Tensor t(quantd::DType::kFloat, shape);
    for (float& v : t.mutable_span<float>()) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<float>((state >> 40) * (2.0 / (1 << 24)) - 1.0);
    }
    c->calib.push_back({{in.name, std::move(t)}});
  }
  c->name = name;
  c->model_bytes = *std::move(bytes);
  return true;
}

// FNV-1a of the output model: a change in any byte shows.
uint64_t Fnv1a(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// Calibrate stage vs a plain float pass (wall and process CPU seconds).
void PrintObserverCost(const std::string& name,
                       const quantd::bench::StageRecorder& stages,
                       quantd::ThreadPool* pool) {
  auto pass = quantd::bench::TimeFloatPass(stages.input(), pool);
  if (!pass.ok()) {
    std::printf("%-16s float pass failed: %s\n", name.c_str(),
                pass.status().ToString().c_str());
    return;
  }
  const quantd::bench::Seconds cal = stages.Stage("calibrate");
  std::printf(
      "%-16s calibrate %.3f s (cpu %.3f s) vs float pass %.3f s (cpu %.3f "
      "s): observers %.0f%% of the pass (cpu %.0f%%)\n",
      name.c_str(), cal.wall, cal.cpu, pass->wall, pass->cpu,
      100 * (cal.wall - pass->wall) / pass->wall,
      100 * (cal.cpu - pass->cpu) / pass->cpu);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::string root = ".cache";
  const char* env = std::getenv("QUANTD_CACHE_DIR");
  if (env != nullptr && *env) root = env;
  std::string models = root + "/models", samples = root + "/samples";
  std::string tpc = "imx500@4.1";
  std::string mobilenet = "../shared/fixtures/bench-models/mobilenet_v2.onnx";
  std::string only;  // run this model only
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") absl::SimpleAtoi(argv[i + 1], &threads);
    if (a == "--models") models = argv[i + 1];
    if (a == "--samples") samples = argv[i + 1];
    if (a == "--tpc") tpc = argv[i + 1];
    if (a == "--mobilenet") mobilenet = argv[i + 1];
    if (a == "--only") only = argv[i + 1];
  }
  std::vector<Case> cases;
  Case example{"example_cnn", *quantd::ExportOnnx(quantd::MakeExampleCnn()),
               quantd::MakeExampleImages(32, 1)};
  cases.push_back(std::move(example));
  for (const char* name : {"ppocr_cls", "oww_embedding", "ppocr_det"}) {
    Case c;
    if (LoadReal(models, samples, name, &c)) cases.push_back(std::move(c));
  }
  std::vector<int> report_samples(cases.size(), 0);
  for (int report : {0, -1}) {
    Case c;
    if (!LoadRandomInputs(mobilenet, "mobilenet_v2", 64, &c)) break;
    cases.push_back(std::move(c));
    report_samples.push_back(report);
  }
  quantd::tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  quantd::ThreadPool pool(threads - 1);
  std::printf("PTQ job time (%s, %d threads)\n", tpc.c_str(), threads);
  std::printf("%-16s %-10s %10s %7s\n", "model", "stage", "seconds", "share");
  std::vector<double> mobilenet_seconds;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    if (!only.empty() && c.name != only) continue;
    quantd::v1::QuantizeRequest r;
    r.set_report_samples(report_samples[ci]);
    r.set_onnx_model(c.model_bytes);
    AddSamples(c.calib, r.mutable_calibration_samples());
    r.mutable_tpc()->set_name(tpc);
    quantd::JobContext ctx;
    ctx.registry = &registry;
    ctx.pool = &pool;
    quantd::bench::StageRecorder stages;
    const bool observer_cost =
        c.name == "mobilenet_v2" && mobilenet_seconds.empty();
    if (observer_cost) {
      ctx.on_stage_start = stages.OnStageStart();
      ctx.on_preflight = stages.OnPreflight();
    }
    auto t0 = std::chrono::steady_clock::now();
    auto result = quantd::RunQuantizeJob(r, ctx);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!result.ok()) {
      std::printf("%-16s failed: %s\n", c.name.c_str(),
                  result.status().ToString().c_str());
      continue;
    }
    auto report = nlohmann::json::parse(result->report_json());
    for (const auto& [stage, seconds] : report["timings_seconds"].items()) {
      if (stage == "total") continue;
      std::printf("%-16s %-10s %10.3f %6.1f%%\n", c.name.c_str(), stage.c_str(),
                  seconds.get<double>(), 100 * seconds.get<double>() / wall);
    }
    std::printf(
        "%-16s %-10s %10.3f (%zu calibration samples, report on %s, SQNR "
        "%.2f dB, QDQ model %016llx)\n",
        c.name.c_str(), "TOTAL", wall, c.calib.size(),
        report_samples[ci] < 0 ? "all" : "the default 16 at most",
        result->output_sqnr_db(),
        static_cast<unsigned long long>(Fnv1a(result->qdq_onnx())));
    if (c.name == "mobilenet_v2") mobilenet_seconds.push_back(wall);
    if (observer_cost) PrintObserverCost(c.name, stages, &pool);
  }
  if (mobilenet_seconds.size() == 2) {
    std::printf(
        "mobilenet_v2 job, report on 16 vs all 64 samples: %.2f s vs %.2f s "
        "(%.2fx faster)\n",
        mobilenet_seconds[0], mobilenet_seconds[1],
        mobilenet_seconds[1] / mobilenet_seconds[0]);
  }
  return 0;
}
