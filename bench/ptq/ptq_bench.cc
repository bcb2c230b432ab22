// ptq_bench [--threads N[,M...]] [--models DIR] [--samples DIR]
// [--mobilenet FILE] [--only MODEL] [--report-all 0|1]:
// time of the whole PTQ job (W8A8, imx500@4.1 default TPC) per model and per
// stage, wall and process CPU seconds, for the bundled example CNN, the real
// models of scripts/fetch_models.sh when they are present (.cache/models,
// .cache/samples) and the shared MobileNetV2 (64 random 224x224 samples,
// untrained weights: timing only). With several thread counts
// (`--threads 1,2`) every case runs at each and the ratios to the first count
// are printed per stage. MobileNetV2 runs twice per thread count unless
// `--report-all 0`: the report on the default 16 samples and on all 64. Its
// first run also times a plain float pass over the same samples and prints
// what the calibrate stage's observers cost as a share of it
// (observer_cost.h). CPU seconds are the figures to read on a loaded machine.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
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
    quantd::bench::FillUniform(t.mutable_span<float>(), &state);
    c->calib.push_back({{in.name, std::move(t)}});
  }
  c->name = name;
  c->model_bytes = *std::move(bytes);
  return true;
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

struct Run {
  std::string name;
  int threads = 0;
  std::vector<std::pair<std::string, quantd::bench::Seconds>> stages;
  quantd::bench::Seconds total;
};

// Runs one case; prints its stages and returns them (empty on failure).
Run RunCase(const Case& c, int report_samples, int threads,
            const std::string& tpc, quantd::tpc::TpcRegistry* registry,
            quantd::ThreadPool* pool, bool observer_cost) {
  Run run{c.name, threads, {}, {}};
  quantd::v1::QuantizeRequest r;
  r.set_report_samples(report_samples);
  r.set_onnx_model(c.model_bytes);
  AddSamples(c.calib, r.mutable_calibration_samples());
  r.mutable_tpc()->set_name(tpc);
  quantd::JobContext ctx;
  ctx.registry = registry;
  ctx.pool = pool;
  quantd::bench::StageRecorder stages;
  ctx.on_stage_start = stages.OnStageStart();
  ctx.on_preflight = stages.OnPreflight();
  const quantd::bench::Seconds t0 = quantd::bench::Now();
  auto result = quantd::RunQuantizeJob(r, ctx);
  stages.OnStageStart()("end").IgnoreError();
  const quantd::bench::Seconds t1 = quantd::bench::Now();
  run.total = {t1.wall - t0.wall, t1.cpu - t0.cpu};
  if (!result.ok()) {
    std::printf("%-16s failed: %s\n", c.name.c_str(),
                result.status().ToString().c_str());
    return run;
  }
  for (const std::string& stage : stages.Names()) {
    if (stage == "end") continue;
    const quantd::bench::Seconds s = stages.Stage(stage);
    run.stages.emplace_back(stage, s);
    std::printf("%-16s %-16s %8.3f %8.3f %6.1f%%\n", c.name.c_str(),
                stage.c_str(), s.wall, s.cpu, 100 * s.wall / run.total.wall);
  }
  std::printf(
      "%-16s %-16s %8.3f %8.3f (%d threads, %zu calibration samples, report "
      "on %s, SQNR %.2f dB, QDQ model %016llx, report %016llx)\n",
      c.name.c_str(), "TOTAL", run.total.wall, run.total.cpu, threads,
      c.calib.size(), report_samples < 0 ? "all" : "the default 16 at most",
      result->output_sqnr_db(),
      static_cast<unsigned long long>(quantd::bench::Fnv1a(result->qdq_onnx())),
      static_cast<unsigned long long>(
          quantd::bench::ReportDigest(result->report_json())));
  if (observer_cost) PrintObserverCost(c.name, stages, pool);
  return run;
}

// Wall and CPU of each stage at `b.threads` against `a.threads`.
void PrintScaling(const Run& a, const Run& b) {
  std::printf("%s: %d threads vs %d, speed-up (wall) and CPU ratio\n",
              a.name.c_str(), b.threads, a.threads);
  auto line = [&](const std::string& stage, const quantd::bench::Seconds& x,
                  const quantd::bench::Seconds& y) {
    std::printf("  %-16s wall %7.3f -> %7.3f s (%.2fx)  cpu %7.3f -> %7.3f s\n",
                stage.c_str(), x.wall, y.wall, y.wall > 0 ? x.wall / y.wall : 0,
                x.cpu, y.cpu);
  };
  for (const auto& [stage, x] : a.stages) {
    for (const auto& [stage_b, y] : b.stages) {
      if (stage_b == stage) line(stage, x, y);
    }
  }
  line("TOTAL", a.total, b.total);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {2};
  std::string root = ".cache";
  const char* env = std::getenv("QUANTD_CACHE_DIR");
  if (env != nullptr && *env) root = env;
  std::string models = root + "/models", samples = root + "/samples";
  std::string tpc = "imx500@4.1";
  std::string mobilenet = "../shared/fixtures/bench-models/mobilenet_v2.onnx";
  std::string only;        // run this model only
  bool report_all = true;  // MobileNetV2's second run, report on all 64
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") {
      thread_counts.clear();
      for (absl::string_view t : absl::StrSplit(argv[i + 1], ',')) {
        int n = 0;
        if (absl::SimpleAtoi(t, &n) && n > 0) thread_counts.push_back(n);
      }
      if (thread_counts.empty()) thread_counts = {2};
    }
    if (a == "--models") models = argv[i + 1];
    if (a == "--samples") samples = argv[i + 1];
    if (a == "--tpc") tpc = argv[i + 1];
    if (a == "--mobilenet") mobilenet = argv[i + 1];
    if (a == "--only") only = argv[i + 1];
    if (a == "--report-all") report_all = std::string(argv[i + 1]) != "0";
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
    if (report < 0 && !report_all) break;
    Case c;
    if (!LoadRandomInputs(mobilenet, "mobilenet_v2", 64, &c)) break;
    cases.push_back(std::move(c));
    report_samples.push_back(report);
  }
  quantd::tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  // runs[t][case]: the default-report run of each case at each thread count.
  std::vector<std::vector<Run>> runs(thread_counts.size());
  for (size_t ti = 0; ti < thread_counts.size(); ++ti) {
    const int threads = thread_counts[ti];
    quantd::ThreadPool pool(threads - 1);
    std::printf("PTQ job time (%s, %d threads)\n", tpc.c_str(), threads);
    std::printf("%-16s %-16s %8s %8s %7s\n", "model", "stage", "wall s",
                "cpu s", "share");
    std::vector<double> mobilenet_seconds;
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Case& c = cases[ci];
      if (!only.empty() && c.name != only) continue;
      const bool first_mobilenet =
          c.name == "mobilenet_v2" && mobilenet_seconds.empty();
      Run run = RunCase(c, report_samples[ci], threads, tpc, &registry, &pool,
                        first_mobilenet);
      if (c.name == "mobilenet_v2") mobilenet_seconds.push_back(run.total.wall);
      if (report_samples[ci] == 0 && !run.stages.empty()) {
        runs[ti].push_back(std::move(run));
      }
    }
    if (mobilenet_seconds.size() == 2) {
      std::printf(
          "mobilenet_v2 job, report on 16 vs all 64 samples: %.2f s vs %.2f "
          "s (%.2fx faster)\n",
          mobilenet_seconds[0], mobilenet_seconds[1],
          mobilenet_seconds[1] / mobilenet_seconds[0]);
    }
  }
  for (size_t ti = 1; ti < runs.size(); ++ti) {
    for (const Run& a : runs[0]) {
      for (const Run& b : runs[ti]) {
        if (b.name == a.name) PrintScaling(a, b);
      }
    }
  }
  return 0;
}
