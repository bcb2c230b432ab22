// The `hessian` stage (HMSE's per-element Hutchinson scores) per real model,
// against one float forward pass of the same prepared model in the same
// process: the job's preflight, PrepareGraph and AttachTpc (imx500@5.0,
// GPTQ + HMSE), then ComputeHessianScores on the first `--samples`
// calibration samples. Prints per model the stage's wall and process CPU
// seconds, the backward passes run (iterations summed over the samples), one
// backward pass in float forward passes (stage CPU seconds / passes / the
// forward's CPU seconds) and a digest of the scores (changes with any bit).
//
//   hessian_bench [--cache DIR] [--models ppocr_cls,ppocr_rec]
//                 [--samples N] [--threads N]

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/prep/attach.h"
#include "core/pipeline/prep/graph_prep.h"
#include "core/pipeline/ptq/hessian_scores.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"

namespace quantd {
namespace {

// Keeps the stage's last message ("... N backward passes per sample ...").
class LastMessage : public ProgressSink {
 public:
  void Report(const Progress& p) override {
    absl::MutexLock l(&mu_);
    message_ = p.message;
  }
  std::string message() {
    absl::MutexLock l(&mu_);
    return message_;
  }

 private:
  absl::Mutex mu_;
  std::string message_;
};

// FNV-1a of every score's bytes, kernels in name order.
uint64_t ScoresDigest(const hessian::HessianScores& scores) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, values] : scores) {
    h = bench::Fnv1a(
        absl::string_view(reinterpret_cast<const char*>(values.data()),
                          values.size() * sizeof(float)),
        h);
  }
  return h;
}

// Process CPU seconds of one float forward pass (median of 5, no pool).
double ForwardCpuSeconds(const Model& model, const SampleFeeds& sample) {
  auto exec = Executor::Create(std::make_shared<const Model>(model), {});
  if (!exec.ok()) return 0;
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    const double start = bench::ProcessCpuSeconds();
    if (!(*exec)->Run(sample, {}).ok()) return 0;
    if (i > 0)
      t.push_back(bench::ProcessCpuSeconds() -
                  start);  // the first one warms up
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void RunModel(const std::string& cache, const std::string& name, int samples,
              int threads, const tpc::TpcRegistry& registry) {
  auto bytes =
      ReadFileLimited(cache + "/models/" + name + ".onnx", int64_t{1} << 30);
  if (!bytes.ok()) {
    std::printf("%-12s missing\n", name.c_str());
    return;
  }
  auto model = ImportOnnx(*bytes);
  if (!model.ok()) return;
  std::vector<std::string> inputs;
  for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
  auto calib = ReadSampleSet(cache + "/samples/" + name + "/calib", inputs);
  if (!calib.ok()) return;
  v1::QuantizeRequest r;
  r.set_onnx_model(*bytes);
  for (int i = 0; i < samples && i < static_cast<int>(calib->samples.size());
       ++i) {
    v1::Sample* s = r.add_calibration_samples();
    for (const auto& [n, t] : calib->samples[i]) {
      *s->add_inputs() = TensorToSampleProto(t, n);
    }
  }
  r.mutable_tpc()->set_name("imx500@5.0");
  r.mutable_gptq()->set_enabled(true);
  r.mutable_quantization()->set_weights_error_method(v1::ERROR_METHOD_HMSE);
  auto input = PreflightJob(r, registry, JobLimits());
  if (!input.ok()) {
    std::printf("%-12s preflight: %s\n", name.c_str(),
                std::string(input.status().message()).c_str());
    return;
  }
  JobState state;
  state.options = input->spec.ptq;
  state.model = input->model;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [n, t] : input->calibration[0]) shapes[n] = t.shape();
  absl::Status s =
      PrepareGraph(state.options, shapes, &state.model, &state.warnings);
  if (s.ok()) s = AttachTpc(input->tpc.tpc, input->spec.attach, &state);
  if (!s.ok()) {
    std::printf("%-12s prepare: %s\n", name.c_str(),
                std::string(s.message()).c_str());
    return;
  }
  const double forward = ForwardCpuSeconds(state.model, input->calibration[0]);
  ThreadPool pool(threads - 1);
  LastMessage sink;
  const double cpu0 = bench::ProcessCpuSeconds();
  const absl::Time start = absl::Now();
  auto scores =
      ComputeHessianScores(state, input->calibration, &pool, nullptr, &sink);
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const double cpu = bench::ProcessCpuSeconds() - cpu0;
  if (!scores.ok()) {
    std::printf("%-12s hessian: %s\n", name.c_str(),
                std::string(scores.status().message()).c_str());
    return;
  }
  // "... N backward passes per sample on average".
  const std::string msg = sink.message();
  int per_sample = 0;
  const size_t comma = msg.rfind(", ");
  if (comma != std::string::npos) {
    std::vector<std::string> words = absl::StrSplit(msg.substr(comma + 2), ' ');
    if (!absl::SimpleAtoi(words[0], &per_sample)) per_sample = 0;
  }
  const int n = std::min<int>(samples, input->calibration.size());
  const double passes = static_cast<double>(per_sample) * n;
  std::printf("%-12s %7d %8.2f %8.2f %7.0f %9.2f %10.1f %016llx\n",
              name.c_str(), n, wall, cpu, passes, 1e3 * forward,
              passes > 0 && forward > 0 ? cpu / passes / forward : 0.0,
              static_cast<unsigned long long>(ScoresDigest(**scores)));
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  std::string cache = ".cache";
  std::vector<std::string> models = {"ppocr_cls", "ppocr_rec"};
  int samples = 16, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--cache") {
      cache = value;
    } else if (flag == "--models") {
      models = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (flag == "--samples" && absl::SimpleAtoi(value, &samples) &&
               samples > 0) {
    } else if (flag == "--threads" && absl::SimpleAtoi(value, &threads) &&
               threads > 0) {
    } else {
      std::fprintf(stderr, "hessian_bench: bad flag %s %s\n", flag.c_str(),
                   value.c_str());
      return 2;
    }
  }
  tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  std::printf("%-12s %7s %8s %8s %7s %9s %10s %s\n", "model", "samples",
              "wall_s", "cpu_s", "passes", "fwd_ms", "bwd/fwd", "scores");
  for (const std::string& name : models) {
    RunModel(cache, name, samples, threads, registry);
  }
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Main(argc, argv); }
