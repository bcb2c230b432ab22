// Service overhead: the same small quantization job run in-process
// (RunQuantizeJob) and through quantd over localhost gRPC (C++ client), in
// the same run; then throughput in jobs/minute for 1, 2 and 8 concurrent
// clients. Target: overhead <= 5%.
//
//   service_bench [--jobs=N] [--workers=N]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "core/pipeline/quantize_job.h"
#include "server/grpc_server.h"
#include "tests/data/onnx/model_builder.h"

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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') {
      return std::atoi(argv[i] + n + 1);
    }
  }
  return fallback;
}

int Run(int argc, char** argv) {
  const int jobs = Flag(argc, argv, "--jobs", 15);
  const int workers = Flag(argc, argv, "--workers", 2);
  const v1::QuantizeRequest request = SmallModelJob();

  server::ServerOptions options;
  options.port = 0;
  options.metrics_port = -1;
  options.workers = workers;
  options.compute_threads = 1;  // the in-process run below is 1-threaded too
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
  ThreadPool pool(1);
  CancellationToken token;
  NullProgressSink progress;
  JobContext context;
  context.registry = (*catalog)->registry();
  context.pool = &pool;
  context.cancel = &token;
  context.progress = &progress;

  // Interleave the two so machine noise hits both alike; one warm-up each.
  std::vector<double> local_s, remote_s;
  for (int i = 0; i <= jobs; ++i) {
    absl::Time t0 = absl::Now();
    auto local = RunQuantizeJob(request, context);
    const double local_time = absl::ToDoubleSeconds(absl::Now() - t0);
    t0 = absl::Now();
    auto remote = (*client)->Quantize(request);
    const double remote_time = absl::ToDoubleSeconds(absl::Now() - t0);
    if (!local.ok() || !remote.ok()) {
      std::fprintf(stderr, "job failed: %s / %s\n",
                   local.status().ToString().c_str(),
                   remote.status().ToString().c_str());
      return 1;
    }
    if (i == 0) continue;
    local_s.push_back(local_time);
    remote_s.push_back(remote_time);
  }
  const double local_median = Median(local_s), remote_median = Median(remote_s);
  std::printf("job (conv 8->16, 32x32, 16 samples), median of %d runs:\n",
              jobs);
  std::printf("  in-process  %8.2f ms\n", local_median * 1e3);
  std::printf("  via quantd  %8.2f ms\n", remote_median * 1e3);
  std::printf("  service overhead: %+.1f%% (target <= 5%%)\n",
              (remote_median / local_median - 1) * 100);

  std::printf("throughput with --workers=%d:\n", workers);
  for (int clients : {1, 2, 8}) {
    const int per_client = std::max(2, jobs / clients);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    const absl::Time t0 = absl::Now();
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&] {
        for (int j = 0; j < per_client; ++j) {
          if (!(*client)->Quantize(request).ok()) ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
    std::printf("  %d client(s): %7.1f jobs/minute (%d jobs, %d failed)\n",
                clients, clients * per_client * 60.0 / seconds,
                clients * per_client, failures.load());
  }
  (*server)->Shutdown(absl::Seconds(5));
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Run(argc, argv); }
