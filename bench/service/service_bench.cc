// Service overhead: the same quantization job run in-process
// (RunQuantizeJob) and through quantd over localhost gRPC (C++ client),
// interleaved in the same run; then jobs/minute with 1 and 2 workers.
// Jobs: a ~10 ms one-conv job and the bundled example CNN, which show the
// fixed cost per job (a streaming call, the samples through protobuf, the
// events), and a real model (ppocr_cls, 32 samples) from the model cache
// (scripts/fetch_models.sh). Targets: overhead <= 5%, 2 workers >= 1.8x one.
// --trace=1 first prints when each event of a call reached the client.
// --target=HOST:PORT only drives the example CNN from --clients=N clients
// against a quantd started apart, and prints the client's own CPU per job
// (run the server under `perf stat` to count its CPU alone).
//
//   service_bench [--jobs=N] [--real_jobs=N] [--workers=N] [--trace=1]
//   service_bench --target=HOST:PORT [--clients=N] [--jobs=N] [--retries=0]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "clients/cpp/client.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "server/grpc_server.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/example_model.h"

namespace quantd {
namespace {

std::vector<float> Pattern(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

// A small CNN layer job: x[1,8,32,32] -> Conv(16, 3x3) with 16 samples.
v1::QuantizeRequest SmallModelJob() {
  constexpr int64_t c = 8, hw = 32, m = 16;
  ConvSpec spec;
  spec.input_shape = {1, c, hw, hw};
  spec.weight = Tensor::FromVector<float>(Pattern(m * c * 9, 1), {m, c, 3, 3});
  spec.bias = Tensor::FromVector<float>(Pattern(m, 2), {m});
  spec.pads = {1, 1, 1, 1};
  v1::QuantizeRequest request;
  request.set_onnx_model(MakeConvModel(spec).SerializeAsString());
  request.mutable_tpc()->set_name("imx500@4.0");
  for (int i = 0; i < 16; ++i) {
    v1::Tensor* t = request.add_calibration_samples()->add_inputs();
    const std::vector<float> x = Pattern(c * hw * hw, 100 + i);
    t->set_name("x");
    t->set_data_type(v1::DATA_TYPE_FLOAT);
    for (int64_t d : {int64_t{1}, c, hw, hw}) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(x.data()),
                                x.size() * sizeof(float)));
  }
  return request;
}

// The bundled example CNN (scripts/demo.sh) with 32 of its images.
v1::QuantizeRequest ExampleJob() {
  v1::QuantizeRequest request;
  request.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  request.mutable_tpc()->set_name("imx500@4.0");
  for (const SampleFeeds& feeds : MakeExampleImages(32, 1)) {
    v1::Sample* s = request.add_calibration_samples();
    for (const auto& [name, t] : feeds) {
      *s->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  return request;
}

// ppocr_cls with its calibration set, or nullopt when the cache is absent.
std::optional<v1::QuantizeRequest> RealModelJob() {
  const char* cache = std::getenv("QUANTD_CACHE_DIR");
  const std::string root =
      cache != nullptr ? cache : QUANTD_SOURCE_ROOT "/.cache";
  auto bytes =
      ReadFileLimited(root + "/models/ppocr_cls.onnx", int64_t{1} << 30);
  if (!bytes.ok()) return std::nullopt;
  auto model = ImportOnnx(*bytes);
  if (!model.ok()) return std::nullopt;
  std::vector<std::string> inputs;
  for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
  auto set = ReadSampleSet(root + "/samples/ppocr_cls/calib", inputs);
  if (!set.ok()) return std::nullopt;
  v1::QuantizeRequest request;
  request.set_onnx_model(*std::move(bytes));
  request.mutable_tpc()->set_name("imx500@4.1");
  for (const auto& sample : set->samples) {
    v1::Sample* s = request.add_calibration_samples();
    for (const auto& [name, t] : sample) {
      *s->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  return request;
}

// The q-quantile (0..1) of v, nearest rank; q = 0.5 is v[size / 2].
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}

double Median(const std::vector<double>& v) { return Quantile(v, 0.5); }

// Which side Overhead runs: both, or one only (--only=local|remote, to
// profile one side, e.g. under `perf stat`).
enum class Sides { kBoth, kLocal, kRemote };

// Runs `request` in-process and through quantd alternately (one warm-up
// each, so machine noise hits both alike) and prints the medians.
bool Overhead(const char* label, const v1::QuantizeRequest& request, int runs,
              const JobContext& context, client::Client& client,
              Sides sides = Sides::kBoth) {
  std::vector<double> local_s, remote_s;
  for (int i = 0; i <= runs; ++i) {
    absl::Time t0 = absl::Now();
    absl::StatusOr<v1::QuantizeResult> local, remote;
    if (sides != Sides::kRemote) local = RunQuantizeJob(request, context);
    const double local_time = absl::ToDoubleSeconds(absl::Now() - t0);
    t0 = absl::Now();
    if (sides != Sides::kLocal) remote = client.Quantize(request);
    const double remote_time = absl::ToDoubleSeconds(absl::Now() - t0);
    if ((sides != Sides::kRemote && !local.ok()) ||
        (sides != Sides::kLocal && !remote.ok())) {
      std::fprintf(stderr, "job failed: %s / %s\n",
                   local.status().ToString().c_str(),
                   remote.status().ToString().c_str());
      return false;
    }
    if (i == 0) continue;
    local_s.push_back(local_time);
    remote_s.push_back(remote_time);
  }
  const double local_median = Median(local_s);
  const double remote_median = Median(remote_s);
  std::printf("job (%s), median of %d runs:\n", label, runs);
  std::printf("  in-process  %9.2f ms (quartiles %.2f, %.2f)\n",
              local_median * 1e3, Quantile(local_s, 0.25) * 1e3,
              Quantile(local_s, 0.75) * 1e3);
  std::printf("  via quantd  %9.2f ms (quartiles %.2f, %.2f)\n",
              remote_median * 1e3, Quantile(remote_s, 0.25) * 1e3,
              Quantile(remote_s, 0.75) * 1e3);
  std::printf("  service overhead: %+.1f%% = %+.2f ms (target <= 5%%)\n",
              (remote_median / local_median - 1) * 100,
              (remote_median - local_median) * 1e3);
  return true;
}

// Jobs per minute and the process's CPU milliseconds per job: on a shared
// machine the first depends on the load, the second much less; if 2
// workers cost no more CPU per job than one (no lock contention, allocator
// or spinning), jobs/minute scales with the free cores.
struct Throughput {
  double jobs_per_minute = -1;
  double cpu_ms_per_job = 0;
};

// Jobs per minute of `clients` concurrent clients, each sending `per_client`
// jobs one after the other through `client`; -1 on failure.
Throughput Drive(const v1::QuantizeRequest& request, client::Client& client,
                 int clients, int per_client) {
  if (!client.Quantize(request).ok()) return {};  // warm-up
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  const absl::Time t0 = absl::Now();
  const double cpu0 = bench::ProcessCpuSeconds();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      for (int j = 0; j < per_client; ++j) {
        if (!client.Quantize(request).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
  const double cpu = bench::ProcessCpuSeconds() - cpu0;
  if (failures.load() > 0) return {};
  const int n = clients * per_client;
  return {n * 60.0 / seconds, cpu * 1e3 / n};
}

// Drive() against a fresh server with `workers` workers and
// `compute_threads` helpers (-1: the default, the CPUs the workers leave),
// in this process.
Throughput JobsPerMinute(const v1::QuantizeRequest& request, int workers,
                         int compute_threads, int clients, int per_client) {
  server::ServerOptions options;
  options.port = 0;
  options.metrics_port = -1;
  options.workers = workers;
  options.compute_threads = compute_threads;
  options.max_queued_jobs = 64;
  auto server = server::QuantdServer::Start(options);
  if (!server.ok()) return {};
  auto client = client::Client::Create(
      {.target = "127.0.0.1:" + std::to_string((*server)->port())});
  if (!client.ok()) return {};
  const Throughput out = Drive(request, **client, clients, per_client);
  (*server)->Shutdown(absl::Seconds(5));
  return out;
}

// The same without the service: `threads` threads each running `per_thread`
// jobs in-process, sharing a compute pool of `threads` threads (as a server
// with that many workers does). What the machine itself allows.
Throughput InProcessJobsPerMinute(const v1::QuantizeRequest& request,
                                  const JobContext& base, int threads,
                                  int per_thread) {
  ThreadPool pool(threads);
  JobContext context = base;
  context.pool = &pool;
  std::vector<std::thread> runners;
  std::atomic<int> failures{0};
  const absl::Time t0 = absl::Now();
  const double cpu0 = bench::ProcessCpuSeconds();
  for (int t = 0; t < threads; ++t) {
    runners.emplace_back([&] {
      for (int j = 0; j < per_thread; ++j) {
        if (!RunQuantizeJob(request, context).ok()) ++failures;
      }
    });
  }
  for (auto& t : runners) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
  const double cpu = bench::ProcessCpuSeconds() - cpu0;
  if (failures.load() > 0) return {};
  const int n = threads * per_thread;
  return {n * 60.0 / seconds, cpu * 1e3 / n};
}

// The bundled example with 1 and 2 workers, 2 clients each (so that a
// worker never waits for a client). Target: 2 workers >= 1.8x one.
// In-process, 1 and 2 concurrent jobs, for reference.
bool Scaling(const v1::QuantizeRequest& request, const JobContext& context,
             int jobs) {
  const int per_client = std::max(2, jobs / 2);
  const Throughput one = JobsPerMinute(request, 1, -1, 2, per_client);
  const Throughput two = JobsPerMinute(request, 2, -1, 2, per_client);
  // Farm style: every job on its worker's thread alone.
  const Throughput one_single = JobsPerMinute(request, 1, 0, 2, per_client);
  const Throughput two_single = JobsPerMinute(request, 2, 0, 2, per_client);
  // As many helpers as workers, for comparison with the default.
  const Throughput two_old = JobsPerMinute(request, 2, 2, 2, per_client);
  const Throughput local_one =
      InProcessJobsPerMinute(request, context, 1, 2 * per_client);
  const Throughput local_two =
      InProcessJobsPerMinute(request, context, 2, per_client);
  for (const Throughput* t : {&one, &two, &one_single, &two_single, &two_old,
                              &local_one, &local_two}) {
    if (t->jobs_per_minute <= 0) {
      std::fprintf(stderr, "scaling run failed\n");
      return false;
    }
  }
  std::printf("example CNN (32 images), 2 clients x %d jobs:\n", per_client);
  std::printf("  --workers=1  %8.1f jobs/minute, %6.2f CPU ms/job\n",
              one.jobs_per_minute, one.cpu_ms_per_job);
  std::printf("  --workers=2  %8.1f jobs/minute, %6.2f CPU ms/job\n",
              two.jobs_per_minute, two.cpu_ms_per_job);
  std::printf(
      "  2 workers / 1 worker: %.2fx jobs/minute (target >= 1.8x), "
      "%.2fx CPU per job\n",
      two.jobs_per_minute / one.jobs_per_minute,
      two.cpu_ms_per_job / one.cpu_ms_per_job);
  std::printf(
      "  one thread per job (--compute_threads=0): --workers=1 %.1f, "
      "--workers=2 %.1f jobs/minute (%.2fx), %.2f / %.2f CPU ms/job\n",
      one_single.jobs_per_minute, two_single.jobs_per_minute,
      two_single.jobs_per_minute / one_single.jobs_per_minute,
      one_single.cpu_ms_per_job, two_single.cpu_ms_per_job);
  std::printf(
      "  --workers=2 with 2 helpers (one per worker): %.1f "
      "jobs/minute, %.2f CPU ms/job (default now: %.2fx that)\n",
      two_old.jobs_per_minute, two_old.cpu_ms_per_job,
      two.jobs_per_minute / two_old.jobs_per_minute);
  std::printf(
      "  in-process, 1 / 2 concurrent jobs: %.1f / %.1f jobs/minute "
      "(%.2fx: what this machine allows), %.2f / %.2f CPU ms/job\n",
      local_one.jobs_per_minute, local_two.jobs_per_minute,
      local_two.jobs_per_minute / local_one.jobs_per_minute,
      local_one.cpu_ms_per_job, local_two.cpu_ms_per_job);
  // CPU is conserved: N cores give at most N * 60000 CPU ms a minute, so two
  // workers, whose jobs cost `two.cpu_ms_per_job` each (job, gRPC and
  // clients: all in this process), cannot exceed N * 60000 / that.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double busy_one = one.jobs_per_minute * one.cpu_ms_per_job / 6e4;
  const double ceiling = cores * 6e4 / two.cpu_ms_per_job;
  std::printf(
      "  1 worker keeps %.2f of %u cores busy; at 2 workers' CPU per job "
      "the cores allow at most %.0f jobs/minute = %.2fx one worker\n",
      busy_one, cores, ceiling, ceiling / one.jobs_per_minute);
  return true;
}

// --target: the example CNN from `clients` clients against a quantd run
// apart; this process's CPU is the clients' alone.
int DriveTarget(const std::string& target, int clients, int jobs,
                bool retries) {
  auto client =
      client::Client::Create({.target = target, .enable_retries = retries});
  if (!client.ok()) return 1;
  const int per_client = std::max(2, jobs / clients);
  const Throughput t = Drive(ExampleJob(), **client, clients, per_client);
  if (t.jobs_per_minute <= 0) {
    std::fprintf(stderr, "jobs against %s failed\n", target.c_str());
    return 1;
  }
  std::printf(
      "example CNN against %s, %d clients x %d jobs: %.1f jobs/minute, "
      "client CPU %.2f ms/job\n",
      target.c_str(), clients, per_client, t.jobs_per_minute, t.cpu_ms_per_job);
  return 0;
}

// One call through quantd with the arrival time of every event (client
// clock, from the call's start) next to the server's own elapsed time, to
// show where the fixed cost per job goes.
void TraceOneCall(const v1::QuantizeRequest& request, client::Client& client) {
  const absl::Time t0 = absl::Now();
  std::vector<std::string> lines;
  auto result = client.Quantize(request, [&](const v1::JobEvent& event) {
    const double at_ms = absl::ToDoubleMilliseconds(absl::Now() - t0);
    std::string what = "result";
    double server_ms = -1;
    if (event.has_accepted()) what = "accepted";
    if (event.has_progress()) {
      what = event.progress().stage() + " " +
             std::to_string(event.progress().fraction()).substr(0, 4);
      server_ms = event.progress().elapsed_seconds() * 1e3;
    }
    if (event.has_heartbeat()) what = "heartbeat";
    if (event.has_result_chunk()) what = "result_chunk";
    char line[160];
    std::snprintf(line, sizeof(line), "  %8.2f ms  %-24s server %8.2f ms",
                  at_ms, what.c_str(), server_ms);
    lines.push_back(line);
  });
  const double total_ms = absl::ToDoubleMilliseconds(absl::Now() - t0);
  std::printf("one call, events as the client saw them:\n");
  for (const auto& line : lines) std::printf("%s\n", line.c_str());
  std::printf("  %8.2f ms  call returned (%s, result %zu bytes)\n", total_ms,
              result.ok() ? "ok" : result.status().ToString().c_str(),
              result.ok() ? result->ByteSizeLong() : size_t{0});
}

int Run(int argc, char** argv) {
  const int jobs = bench::IntFlag(argc, argv, "jobs", 15);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--target=", 9) == 0) {
      return DriveTarget(argv[i] + 9, bench::IntFlag(argc, argv, "clients", 2),
                         jobs, bench::IntFlag(argc, argv, "retries", 1) != 0);
    }
  }
  const int real_jobs = bench::IntFlag(argc, argv, "real_jobs", 3);
  const int workers = bench::IntFlag(argc, argv, "workers", 2);
  const v1::QuantizeRequest request = SmallModelJob();

  server::ServerOptions options;
  options.port = 0;
  options.metrics_port = -1;
  options.workers = workers;
  // One helper by default, as the in-process pool below; --compute_threads=0
  // runs each job on its worker's thread alone (and in-process, inline).
  const int compute_threads = bench::IntFlag(argc, argv, "compute_threads", 1);
  options.compute_threads = compute_threads;
  options.max_queued_jobs = 64;
  auto server = server::QuantdServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto client = client::Client::Create(
      {.target = "127.0.0.1:" + std::to_string((*server)->port())});
  if (!client.ok()) return 1;

  auto catalog = server::TpcCatalog::Create("");
  if (!catalog.ok()) return 1;
  ThreadPool pool(compute_threads);
  CancellationToken token;
  NullProgressSink progress;
  JobContext context;
  context.registry = (*catalog)->registry();
  context.pool = &pool;
  context.cancel = &token;
  context.progress = &progress;

  const char* only = "";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
  }
  if (only[0] != '\0') {
    const Sides sides =
        std::strcmp(only, "local") == 0 ? Sides::kLocal : Sides::kRemote;
    const bool ok =
        Overhead(only, ExampleJob(), jobs, context, **client, sides);
    (*server)->Shutdown(absl::Seconds(5));
    return ok ? 0 : 1;
  }
  if (bench::IntFlag(argc, argv, "trace", 0) != 0) {
    for (int i = 0; i < 3; ++i) TraceOneCall(request, **client);
    if (const auto real = RealModelJob(); real.has_value()) {
      for (int i = 0; i < 3; ++i) TraceOneCall(*real, **client);
    }
  }
  if (!Overhead("conv 8->16, 32x32, 16 samples", request, jobs, context,
                **client)) {
    return 1;
  }
  if (!Overhead("example CNN, 32 images", ExampleJob(), jobs, context,
                **client)) {
    return 1;
  }
  if (real_jobs <= 0) {
    // --real_jobs=0: no real model.
  } else if (const auto real = RealModelJob(); real.has_value()) {
    if (!Overhead("ppocr_cls, imx500@4.1, 32 samples", *real, real_jobs,
                  context, **client)) {
      return 1;
    }
  } else {
    std::printf(
        "ppocr_cls not in the model cache: run "
        "scripts/fetch_models.sh for the real-model figure\n");
  }

  (*server)->Shutdown(absl::Seconds(5));
  if (bench::IntFlag(argc, argv, "scaling", 1) == 0) return 0;
  return Scaling(ExampleJob(), context, jobs) ? 0 : 1;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Run(argc, argv); }
