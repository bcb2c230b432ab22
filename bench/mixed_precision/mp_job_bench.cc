// Mixed precision against plain PTQ on real models: each
// job runs alone in a forked child (so its peak RSS is its own), first the
// PTQ job, then the same request with `--mp weights=0.75`; the rows print
// wall and CPU time, peak RSS, the ratios MP / PTQ, and the admission
// estimate of the MP job (EstimateJobMemoryBytes) against its peak.
//   ppocr_det   32 samples (its 16 calibration + 8 held-out images + the
//               first 8 calibration images mirrored), 2 threads;
//   ppocr_cls   32 calibration samples, 2 threads;
//   mobilenet_v2 (untrained, bench fixture) 64 random N(0,1) images, MP on
//               the first 32 (MCT's default), 1 thread.
// Args: [cache dir (.cache)] [bench models dir
// (../shared/fixtures/bench-models)] [model names to run...], and
// --sensitivity_depth=N anywhere: the MP jobs with
// MixedPrecisionConfig.sensitivity_depth N (0, MCT's sensitivity, by
// default); --num_of_images=N: with num_of_images N (MCT's 32 by default).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "bench/job_in_child.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"

namespace quantd {
namespace {

struct Spec {
  std::string name;
  int threads = 2;
};

void AddSample(const SampleFeeds& s, v1::QuantizeRequest* r) {
  v1::Sample* p = r->add_calibration_samples();
  for (const auto& [in, t] : s) *p->add_inputs() = TensorToSampleProto(t, in);
}

// The last axis reversed (an image mirrored left-right).
Tensor Mirrored(const Tensor& t) {
  Tensor out = t;
  auto v = out.mutable_span<float>();
  const int64_t w = t.shape().back();
  for (int64_t row = 0; row + w <= static_cast<int64_t>(v.size()); row += w) {
    std::reverse(v.begin() + row, v.begin() + row + w);
  }
  return out;
}

absl::StatusOr<v1::QuantizeRequest> BuildRequest(const std::string& name,
                                                 const std::string& cache,
                                                 const std::string& bench) {
  v1::QuantizeRequest r;
  r.mutable_tpc()->set_name("imx500@4.1");
  const bool mnv2 = name == "mobilenet_v2";
  const std::string path = mnv2
                               ? absl::StrCat(bench, "/mobilenet_v2.onnx")
                               : absl::StrCat(cache, "/models/", name, ".onnx");
  auto bytes = ReadFileLimited(path, int64_t{1} << 30);
  if (!bytes.ok()) return bytes.status();
  if (mnv2) {
    std::mt19937 rng(0);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int s = 0; s < 64; ++s) {
      Tensor x(DType::kFloat, {1, 3, 224, 224});
      for (float& v : x.mutable_span<float>()) v = normal(rng);
      AddSample({{"input", x}}, &r);
    }
    r.set_onnx_model(*std::move(bytes));
    return r;
  }
  auto model = ImportOnnx(*bytes);
  if (!model.ok()) return model.status();
  std::vector<std::string> inputs;
  for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
  auto calib =
      ReadSampleSet(absl::StrCat(cache, "/samples/", name, "/calib"), inputs);
  if (!calib.ok()) return calib.status();
  for (size_t s = 0; s < calib->samples.size() && s < 32; ++s) {
    AddSample(calib->samples[s], &r);
  }
  if (name == "ppocr_det") {
    auto held = ReadSampleSet(
        absl::StrCat(cache, "/samples/", name, "/heldout"), inputs);
    if (!held.ok()) return held.status();
    for (const auto& s : held->samples) AddSample(s, &r);
    for (size_t s = 0; r.calibration_samples_size() < 32; ++s) {
      SampleFeeds m;
      for (const auto& [in, t] : calib->samples[s]) m[in] = Mirrored(t);
      AddSample(m, &r);
    }
  }
  r.set_onnx_model(*std::move(bytes));
  return r;
}

struct Measured {
  bool ok = false;
  double wall_s = 0, cpu_s = 0, mp_stage_s = 0;
  int64_t peak_rss = 0, estimate = 0;
  int samples = 0;
  // FNV-1a of the QDQ model and of the report without timings: any bit of
  // the bit allocation or of the evaluated figures changes them.
  unsigned long long qdq_digest = 0, report_digest = 0;
};

// --sensitivity_depth and --num_of_images: the MP jobs'
// MixedPrecisionConfig fields (0: unset).
int sensitivity_depth = 0;
int num_of_images = 0;

// The child: builds the request, runs the job, returns "stage_s estimate
// samples qdq_digest report_digest" (empty on failure).
std::string Child(const Spec& spec, bool mp, const std::string& cache,
                  const std::string& bench) {
  tpc::TpcRegistry registry;
  auto r = BuildRequest(spec.name, cache, bench);
  if (!registry.AddBuiltins().ok() || !r.ok()) {
    std::fprintf(
        stderr, "%s: %s\n", spec.name.c_str(),
        r.ok() ? "registry" : std::string(r.status().message()).c_str());
    return "";
  }
  if (mp) {
    r->mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_weights_memory_bytes(0.75);
    r->mutable_mixed_precision()->set_sensitivity_depth(sensitivity_depth);
    r->mutable_mixed_precision()->set_num_of_images(num_of_images);
  }
  // `threads` computing threads: the caller and threads - 1 helpers, as
  // ptq_bench and gptq_bench count them.
  ThreadPool pool(spec.threads - 1);
  JobContext ctx;
  ctx.registry = &registry;
  ctx.pool = &pool;
  const int64_t estimate =
      EstimateJobMemoryBytes(*r, JobLimits(), spec.threads);
  auto result = RunQuantizeJob(*r, ctx);
  if (!result.ok()) {
    std::fprintf(stderr, "%s: %s\n", spec.name.c_str(),
                 std::string(result.status().message()).c_str());
    return "";
  }
  const std::string& report = result->report_json();
  double stage = 0;
  const auto timings = report.find("\"timings_seconds\"");
  const auto at = timings == std::string::npos
                      ? timings
                      : report.find("\"mixed_precision\":", timings);
  if (at != std::string::npos) stage = std::atof(report.c_str() + at + 18);
  return absl::StrCat(stage, " ", estimate, " ", r->calibration_samples_size(),
                      " ", bench::Fnv1a(result->qdq_onnx()), " ",
                      bench::ReportDigest(report));
}

Measured RunInChild(const Spec& spec, bool mp, const std::string& cache,
                    const std::string& bench) {
  Measured m;
  const bench::ChildRun run =
      bench::RunInChild([&] { return Child(spec, mp, cache, bench); });
  m.wall_s = run.wall_s;
  m.cpu_s = run.cpu_s;
  m.peak_rss = run.peak_rss;
  long long estimate = 0;
  m.ok = run.ok && std::sscanf(run.line.c_str(), "%lf %lld %d %llu %llu",
                               &m.mp_stage_s, &estimate, &m.samples,
                               &m.qdq_digest, &m.report_digest) == 5;
  m.estimate = estimate;
  return m;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) {
  using namespace quantd;
  sensitivity_depth = bench::IntFlag(argc, argv, "sensitivity_depth", 0);
  num_of_images = bench::IntFlag(argc, argv, "num_of_images", 0);
  std::vector<std::string> args;  // the positional ones
  for (int a = 1; a < argc; ++a) {
    if (!absl::StartsWith(argv[a], "--")) args.emplace_back(argv[a]);
  }
  const std::string cache = args.size() > 0 ? args[0] : ".cache";
  const std::string bench =
      args.size() > 1 ? args[1] : "../shared/fixtures/bench-models";
  std::vector<Spec> specs = {
      {"ppocr_det", 2}, {"ppocr_cls", 2}, {"mobilenet_v2", 1}};
  if (args.size() > 2) {
    std::vector<Spec> only;
    for (size_t a = 2; a < args.size(); ++a) {
      for (const Spec& s : specs) {
        if (s.name == args[a]) only.push_back(s);
      }
    }
    specs = only;
  }
  if (sensitivity_depth != 0 || num_of_images != 0) {
    std::printf("MP jobs with sensitivity_depth %d, num_of_images %d\n",
                sensitivity_depth, num_of_images);
  }
  std::printf(
      "%-13s %3s %4s | %8s %8s %7s | %8s %8s %8s %7s | %6s %6s %6s | %7s %6s\n",
      "model", "thr", "smp", "ptq_s", "ptq_cpu", "ptq_MB", "mp_s", "mp_cpu",
      "stage_s", "mp_MB", "time_x", "cpu_x", "rss_x", "est_MB", "est/pk");
  for (const Spec& spec : specs) {
    const Measured ptq = RunInChild(spec, false, cache, bench);
    const Measured mp = RunInChild(spec, true, cache, bench);
    if (!ptq.ok || !mp.ok) {
      std::printf("%-13s failed (see stderr)\n", spec.name.c_str());
      continue;
    }
    const double mb = 1.0 / (1 << 20);
    std::printf(
        "%-13s %3d %4d | %8.2f %8.2f %7.0f | %8.2f %8.2f %8.2f %7.0f | %6.2f "
        "%6.2f %6.2f | %7.0f %6.2f\n",
        spec.name.c_str(), spec.threads, mp.samples, ptq.wall_s, ptq.cpu_s,
        ptq.peak_rss * mb, mp.wall_s, mp.cpu_s, mp.mp_stage_s, mp.peak_rss * mb,
        mp.wall_s / ptq.wall_s, mp.cpu_s / ptq.cpu_s,
        static_cast<double>(mp.peak_rss) / ptq.peak_rss, mp.estimate * mb,
        static_cast<double>(mp.estimate) / mp.peak_rss);
    std::printf("%-13s MP job: QDQ model %016llx, report %016llx\n",
                spec.name.c_str(), mp.qdq_digest, mp.report_digest);
    std::fflush(stdout);
  }
  return 0;
}
