// cancel_bench [--threads N] [--mobilenet FILE] [--samples N] [--mp 0|1]
//              [--gptq 0|1] [--analyze 0|1] [--target 0|1]
//              [--fractions 0.2,0.5,0.8] [--stages a,b]:
// cancellation latency per job stage. Each case runs once
// to learn how long each stage takes; then, for every stage and fraction f,
// the job runs again and another thread cancels its token f of the way into
// the stage. The latency is the time from Cancel() to RunQuantizeJob's
// return (in the server, the worker and the memory reservation are free at
// that point). Prints one row per case and stage: the stage's own time and
// the worst and median latency over the fractions. Cases: the bundled
// example CNN and the shared MobileNetV2 (random inputs; timing only), with
// mixed precision and GPTQ when asked (default: both on the example, neither
// on MobileNetV2, whose 30 s mixed-precision stage each later trial would
// repeat), the per-layer analysis (default on both: the estimate) and a
// best-effort quality target of 60 dB (default off: its search repeats
// the PTQ job several times).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "nlohmann/json.hpp"
#include "tests/testing/example_model.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// `count` samples of the model's single input, uniform in [-1, 1], seeded.
bool RandomInputs(const quantd::Model& model, int count,
                  std::vector<quantd::SampleFeeds>* out) {
  if (model.graph.inputs.size() != 1) return false;
  const quantd::ValueInfo& in = model.graph.inputs[0];
  std::vector<int64_t> shape = in.shape;
  for (int64_t& d : shape) d = d > 0 ? d : 1;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < count; ++i) {
    quantd::Tensor t(quantd::DType::kFloat, shape);
    for (float& v : t.mutable_span<float>()) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<float>((state >> 40) * (2.0 / (1 << 24)) - 1.0);
    }
    out->push_back({{in.name, std::move(t)}});
  }
  return true;
}

quantd::v1::QuantizeRequest Request(const std::string& model_bytes,
                                    const std::vector<quantd::SampleFeeds>& s,
                                    bool mp, bool gptq, bool analyze,
                                    bool target) {
  quantd::v1::QuantizeRequest r;
  r.set_onnx_model(model_bytes);
  for (const auto& sample : s) {
    auto* p = r.add_calibration_samples();
    for (const auto& [name, t] : sample) {
      *p->add_inputs() = quantd::TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.1");
  if (mp) {
    r.mutable_mixed_precision()
        ->mutable_target_fraction()
        ->set_weights_memory_bytes(0.75);
    r.mutable_mixed_precision()->set_num_of_images(
        std::min<int>(8, r.calibration_samples_size()));
  }
  if (gptq) {
    r.mutable_gptq()->set_enabled(true);
    r.mutable_gptq()->set_n_epochs(1);
  }
  r.set_sensitivity_analysis(analyze);
  if (target) {
    r.mutable_quality_target()->set_metric(
        quantd::v1::QualityTarget::METRIC_SQNR);
    r.mutable_quality_target()->set_value(60);
    r.mutable_quality_target()->set_best_effort(true);
  }
  return r;
}

// One job cancelled `delay` after `stage` starts.
struct Trial {
  bool cancelled = false;       // Cancel() ran before the job returned
  std::string stage_at_cancel;  // the stage running when it did
  double latency_ms = 0;
  std::string status;
};

Trial RunCancelled(const quantd::v1::QuantizeRequest& r, quantd::JobContext ctx,
                   const std::string& stage, Clock::duration delay) {
  quantd::CancellationToken token;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, done = false;
  std::string current;
  Clock::time_point cancel_at{};
  Trial trial;
  ctx.cancel = &token;
  ctx.on_stage_start = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    current = s;
    if (s == stage) started = true;
    cv.notify_all();
    return absl::OkStatus();
  };
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return started || done; });
    if (done) return;
    const Clock::time_point when = Clock::now() + delay;
    cv.wait_until(lock, when, [&] { return done; });
    if (done) return;
    trial.stage_at_cancel = current;
    cancel_at = Clock::now();
    token.Cancel();
    trial.cancelled = true;
  });
  auto result = quantd::RunQuantizeJob(r, ctx);
  const Clock::time_point end = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  }
  canceller.join();
  trial.status = result.ok() ? "OK" : result.status().ToString();
  if (trial.cancelled) trial.latency_ms = Ms(end - cancel_at);
  return trial;
}

void RunCase(const std::string& name, const quantd::v1::QuantizeRequest& r,
             const quantd::JobContext& ctx,
             const std::vector<double>& fractions,
             const std::vector<std::string>& only) {
  const Clock::time_point t0 = Clock::now();
  auto full = quantd::RunQuantizeJob(r, ctx);
  if (!full.ok()) {
    std::printf("%-14s failed: %s\n", name.c_str(),
                full.status().ToString().c_str());
    return;
  }
  std::printf("%-14s %-16s %9.0f ms (uncancelled job)\n", name.c_str(), "TOTAL",
              Ms(Clock::now() - t0));
  auto timings = nlohmann::json::parse(full->report_json())["timings_seconds"];
  for (const std::string stage :
       {"import", "prepare", "calibrate", "select", "mixed_precision", "target",
        "correct", "gptq", "export", "analyze", "report"}) {
    if (!timings.contains(stage)) continue;
    if (!only.empty() &&
        std::find(only.begin(), only.end(), stage) == only.end()) {
      continue;
    }
    const double stage_ms = 1000 * timings[stage].get<double>();
    std::vector<double> latencies;
    std::string notes;
    for (double f : fractions) {
      const auto delay = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(f * stage_ms));
      Trial t = RunCancelled(r, ctx, stage, delay);
      if (!t.cancelled) continue;
      latencies.push_back(t.latency_ms);
      if (t.stage_at_cancel != stage)
        notes += " (cancelled in " + t.stage_at_cancel + ")";
      if (t.status.find("CANCELLED") == std::string::npos) {
        notes += " status " + t.status;
      }
    }
    if (latencies.empty()) {
      std::printf("%-14s %-16s %9.1f ms  not cancelled in time\n", name.c_str(),
                  stage.c_str(), stage_ms);
      continue;
    }
    std::sort(latencies.begin(), latencies.end());
    std::printf(
        "%-14s %-16s %9.1f ms  latency max %8.1f ms  median %8.1f ms%s\n",
        name.c_str(), stage.c_str(), stage_ms, latencies.back(),
        latencies[latencies.size() / 2], notes.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, samples = 16, mp = -1, gptq = -1, analyze = 1, target = 0;
  std::string mobilenet = "../shared/fixtures/bench-models/mobilenet_v2.onnx";
  std::vector<double> fractions = {0.2, 0.5, 0.8};
  std::vector<std::string> only;  // --stages: these stages only
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") (void)absl::SimpleAtoi(argv[i + 1], &threads);
    if (a == "--samples") (void)absl::SimpleAtoi(argv[i + 1], &samples);
    if (a == "--mp") (void)absl::SimpleAtoi(argv[i + 1], &mp);
    if (a == "--gptq") (void)absl::SimpleAtoi(argv[i + 1], &gptq);
    if (a == "--analyze") (void)absl::SimpleAtoi(argv[i + 1], &analyze);
    if (a == "--target") (void)absl::SimpleAtoi(argv[i + 1], &target);
    if (a == "--mobilenet") mobilenet = argv[i + 1];
    if (a == "--stages") only = absl::StrSplit(argv[i + 1], ',');
    if (a == "--fractions") {
      fractions.clear();
      for (absl::string_view f : absl::StrSplit(argv[i + 1], ',')) {
        double v = 0;
        if (absl::SimpleAtod(f, &v)) fractions.push_back(v);
      }
    }
  }
  quantd::tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  quantd::ThreadPool pool(threads - 1);
  quantd::JobContext ctx;
  ctx.registry = &registry;
  ctx.pool = &pool;
  std::printf(
      "Cancellation latency per stage (%d threads; fractions of each "
      "stage:",
      threads);
  for (double f : fractions) std::printf(" %.2f", f);
  std::printf(")\n");

  RunCase("example_cnn",
          Request(*quantd::ExportOnnx(quantd::MakeExampleCnn()),
                  quantd::MakeExampleImages(32, 1), mp != 0, gptq != 0,
                  analyze == 1, target == 1),
          ctx, fractions, only);
  auto bytes = quantd::ReadFileLimited(mobilenet, int64_t{1} << 31);
  if (!bytes.ok()) return 0;
  auto model = quantd::ImportOnnx(*bytes);
  std::vector<quantd::SampleFeeds> calib;
  if (!model.ok() || !RandomInputs(*model, samples, &calib)) return 0;
  RunCase("mobilenet_v2",
          Request(*bytes, calib, mp == 1, gptq == 1, analyze == 1, target == 1),
          ctx, fractions, only);
  return 0;
}
