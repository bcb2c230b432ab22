// Accuracy recovery against plain PTQ on real models: for each model the
// plain PTQ job, then each recovery job of the same request, each alone in a
// forked child (its peak RSS is its own). Prints wall and CPU seconds, the
// ratio to the PTQ job of the same run, peak RSS, the memory the server
// would have reserved for the job (JobMemoryReservation: admitted, then
// grown as the job reaches the quality target's trials) against that peak,
// the report's output SQNR and,
// for the quality target, its memory against the 8-bit configuration.
//   target    --target-sqnr 30 --target-best-effort
//   mp        --mp weights=0.75
//   gptq      --gptq
//   analyze   --analyze (per-layer sensitivity on the report's samples;
//             the estimate where the model has a backward pass)
//   exact     --analyze-method exact (the exact analysis)
//   budget    --target-sqnr 30 --target-best-effort --mp total=1.5
//   nogptq    --target-sqnr 30 --target-best-effort --target-skip-gptq
//   hmse      --target-sqnr 30 --target-best-effort --gptq: the target
//             with GPTQ asked for keeps its HMSE trial (Hessian scores)
// Samples: ppocr_cls/det/rec their 16 calibration images (the e2e sets,
// scripts/fetch_models.sh), the report on the first 16; mobilenet_v2 (the
// untrained bench fixture: timing and memory only) 16 N(0,1) images.
// Args: [cache dir (.cache)] [bench models dir
// (../shared/fixtures/bench-models)] [models...]; --jobs=target,mp,...
// (default target,mp,gptq,analyze), --threads=N (2), --tpc=NAME
// (imx500@5.0), --repeat=N (the calibration set N times: memory must not
// grow with it).
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "bench/job_in_child.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "nlohmann/json.hpp"

namespace quantd {
namespace {

struct Settings {
  std::string cache = ".cache";
  std::string bench = "../shared/fixtures/bench-models";
  std::string tpc = "imx500@5.0";
  int threads = 2;
  int repeat = 1;
};

void AddSample(const SampleFeeds& s, v1::QuantizeRequest* r) {
  v1::Sample* p = r->add_calibration_samples();
  for (const auto& [in, t] : s) *p->add_inputs() = TensorToSampleProto(t, in);
}

absl::StatusOr<v1::QuantizeRequest> PtqRequest(const std::string& name,
                                               const Settings& s) {
  v1::QuantizeRequest r;
  r.mutable_tpc()->set_name(s.tpc);
  const bool mnv2 = name == "mobilenet_v2";
  const std::string path =
      mnv2 ? absl::StrCat(s.bench, "/mobilenet_v2.onnx")
           : absl::StrCat(s.cache, "/models/", name, ".onnx");
  auto bytes = ReadFileLimited(path, int64_t{1} << 30);
  if (!bytes.ok()) return bytes.status();
  std::vector<SampleFeeds> samples;
  if (mnv2) {
    std::mt19937 rng(0);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int i = 0; i < 16; ++i) {
      Tensor x(DType::kFloat, {1, 3, 224, 224});
      for (float& v : x.mutable_span<float>()) v = normal(rng);
      samples.push_back({{"input", x}});
    }
  } else {
    auto model = ImportOnnx(*bytes);
    if (!model.ok()) return model.status();
    std::vector<std::string> inputs;
    for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
    auto calib = ReadSampleSet(
        absl::StrCat(s.cache, "/samples/", name, "/calib"), inputs);
    if (!calib.ok()) return calib.status();
    samples = std::move(calib->samples);
  }
  for (int k = 0; k < s.repeat; ++k) {
    for (const SampleFeeds& f : samples) AddSample(f, &r);
  }
  r.set_onnx_model(*std::move(bytes));
  return r;
}

constexpr const char* kJobs[] = {"target",  "nogptq", "mp",     "gptq",
                                 "analyze", "exact",  "budget", "hmse"};

void AddJob(const std::string& job, v1::QuantizeRequest* r) {
  const bool budget = job == "budget";
  if (job == "target" || job == "nogptq" || job == "hmse" || budget) {
    v1::QualityTarget* t = r->mutable_quality_target();
    t->set_metric(v1::QualityTarget::METRIC_SQNR);
    t->set_value(30);
    t->set_best_effort(true);
    t->set_skip_gptq(job == "nogptq");
  }
  if (budget) {
    r->mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_total_memory_bytes(1.5);
  }
  if (job == "mp") {
    r->mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_weights_memory_bytes(0.75);
  }
  if (job == "gptq" || job == "hmse") r->mutable_gptq()->set_enabled(true);
  if (job == "analyze" || job == "exact") r->set_sensitivity_analysis(true);
  if (job == "exact") {
    r->set_sensitivity_analysis_method(v1::SENSITIVITY_ANALYSIS_METHOD_EXACT);
  }
}

// The child: "estimate_bytes output_sqnr_db memory_vs_8bit qdq_digest".
std::string RunJob(const std::string& model, const std::string& job,
                   const Settings& s) {
  tpc::TpcRegistry registry;
  auto r = PtqRequest(model, s);
  if (!registry.AddBuiltins().ok() || !r.ok()) {
    std::fprintf(stderr, "%s: %s\n", model.c_str(),
                 r.ok() ? "registry" : r.status().ToString().c_str());
    return "";
  }
  AddJob(job, &*r);
  // `threads` computing threads: the caller and threads - 1 helpers.
  ThreadPool pool(s.threads - 1);
  JobContext ctx;
  ctx.registry = &registry;
  ctx.pool = &pool;
  // What the server reserves: admitted, grown at each stage reached.
  JobMemoryReservation reservation;
  ctx.on_preflight = [&](const JobInput& input) {
    reservation = JobMemoryReservation(input, s.threads);
    return absl::OkStatus();
  };
  ctx.on_memory_stage = [&](JobMemoryStage stage) {
    reservation.Reach(stage);
    return absl::OkStatus();
  };
  auto result = RunQuantizeJob(*r, ctx);
  const int64_t estimate = reservation.bytes();  // it never shrinks
  if (!result.ok()) {
    std::fprintf(stderr, "%s %s: %s\n", model.c_str(), job.c_str(),
                 result.status().ToString().c_str());
    return "";
  }
  const nlohmann::json report = nlohmann::json::parse(result->report_json());
  const double sqnr = report.value("output_sqnr_db", 0.0);
  double memory = 1.0;  // total memory against the 8-bit configuration
  if (report.contains("resource_utilization") &&
      report.contains("baseline_8bit")) {
    const double a =
        report["resource_utilization"].value("total_memory_bytes", 0.0);
    const double b = report["baseline_8bit"].value("total_memory_bytes", 0.0);
    if (b > 0) memory = a / b;
  }
  return absl::StrCat(estimate, " ", sqnr, " ", memory, " ",
                      bench::Fnv1a(result->qdq_onnx()));
}

struct Row {
  bench::ChildRun run;
  long long estimate = 0;
  double sqnr = 0, memory = 0;
  unsigned long long digest = 0;
};

Row Measure(const std::string& model, const std::string& job,
            const Settings& s) {
  Row row;
  row.run = bench::RunInChild([&] { return RunJob(model, job, s); });
  if (row.run.ok &&
      std::sscanf(row.run.line.c_str(), "%lld %lf %lf %llu", &row.estimate,
                  &row.sqnr, &row.memory, &row.digest) != 4) {
    row.run.ok = false;
  }
  return row;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) {
  using namespace quantd;
  Settings s;
  s.threads = bench::IntFlag(argc, argv, "threads", 2);
  s.repeat = bench::IntFlag(argc, argv, "repeat", 1);
  s.tpc = bench::StringFlag(argc, argv, "tpc", s.tpc);
  const std::vector<std::string> jobs = absl::StrSplit(
      bench::StringFlag(argc, argv, "jobs", "target,mp,gptq,analyze"), ',');
  for (const std::string& job : jobs) {
    if (!absl::c_linear_search(kJobs, job)) {
      std::fprintf(stderr, "unknown job '%s' (one of %s)\n", job.c_str(),
                   absl::StrJoin(kJobs, ",").c_str());
      return 2;
    }
  }
  std::vector<std::string> args;  // the positional ones
  for (int a = 1; a < argc; ++a) {
    if (!absl::StartsWith(argv[a], "--")) args.emplace_back(argv[a]);
  }
  if (args.size() > 0) s.cache = args[0];
  if (args.size() > 1) s.bench = args[1];
  std::vector<std::string> models(
      args.begin() + std::min<size_t>(2, args.size()), args.end());
  if (models.empty()) {
    models = {"ppocr_det", "ppocr_rec", "ppocr_cls", "mobilenet_v2"};
  }
  std::printf("%s, %d thread(s), calibration set x%d\n", s.tpc.c_str(),
              s.threads, s.repeat);
  std::printf("%-13s %-8s | %7s %7s %6s %6s | %7s %7s %6s | %7s %6s | %s\n",
              "model", "job", "wall_s", "cpu_s", "x_ptq", "cpu_x", "peak_MB",
              "est_MB", "est/pk", "sqnr_dB", "mem_x", "qdq");
  const double mb = 1.0 / (1 << 20);
  for (const std::string& model : models) {
    const Row ptq = Measure(model, "ptq", s);
    if (!ptq.run.ok) {
      std::printf("%-13s ptq failed (see stderr)\n", model.c_str());
      continue;
    }
    std::vector<std::string> all = {"ptq"};
    all.insert(all.end(), jobs.begin(), jobs.end());
    for (const std::string& job : all) {
      const Row row = job == "ptq" ? ptq : Measure(model, job, s);
      if (!row.run.ok) {
        std::printf("%-13s %-8s failed (see stderr)\n", model.c_str(),
                    job.c_str());
        continue;
      }
      std::printf(
          "%-13s %-8s | %7.2f %7.2f %6.2f %6.2f | %7.0f %7.0f %6.2f | %7.2f "
          "%6.3f | %016llx\n",
          model.c_str(), job.c_str(), row.run.wall_s, row.run.cpu_s,
          row.run.wall_s / ptq.run.wall_s, row.run.cpu_s / ptq.run.cpu_s,
          row.run.peak_rss * mb, row.estimate * mb,
          static_cast<double>(row.estimate) / row.run.peak_rss, row.sqnr,
          row.memory, row.digest);
      std::fflush(stdout);
    }
  }
  return 0;
}
