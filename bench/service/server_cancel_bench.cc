// Cancellation latency through quantd: a one-worker quantd
// (the real binary) runs the example CNN with mixed precision and GPTQ (32
// images), and the C++ client cancels each job at a random time into it
// (uniform over the first 90% of a job, seeded). Per stage the job was in,
// prints the server's time from the cancel to freeing the worker and the
// reservation (`cancel_seconds` of its `job finished` log line) and the
// client's time from Cancel() to the call's return. Target: 100 ms.
//
//   server_cancel_bench [--jobs=N] [--compute_threads=N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "core/graph/onnx_export.h"
#include "core/pipeline/job/samples.h"
#include "tests/integration/server_process.h"
#include "tests/testing/example_model.h"

namespace quantd {
namespace {

int Flag(int argc, char** argv, const char* name, int fallback) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') {
      return std::atoi(argv[i] + n + 1);
    }
  }
  return fallback;
}

v1::QuantizeRequest Job(const std::string& request_id) {
  v1::QuantizeRequest r;
  r.set_request_id(request_id);
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const SampleFeeds& sample : MakeExampleImages(32, 1)) {
    v1::Sample* s = r.add_calibration_samples();
    for (const auto& [name, t] : sample) {
      *s->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.1");
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_n_epochs(1);
  return r;
}

struct Latencies {
  std::vector<double> server_ms, client_ms;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

int Run(int argc, char** argv) {
  const int jobs = Flag(argc, argv, "--jobs", 40);
  auto server = testing::ServerProcess::Start(
      {"--workers=1",
       absl::StrCat("--compute_threads=",
                    Flag(argc, argv, "--compute_threads", 1)),
       "--metrics_port=-1"});
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  auto client = client::Client::Create({.target = (*server)->target()});
  if (!client.ok()) return 1;
  // Whole jobs (the median of 3, after a warm-up): the cancel times are
  // uniform over the first 90% of one.
  std::vector<double> whole_ms;
  for (int i = 0; i < 4; ++i) {
    const absl::Time t0 = absl::Now();
    if (!(*client)->Quantize(Job(absl::StrCat("whole-", i))).ok()) return 1;
    if (i > 0) whole_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
  }
  const absl::Duration whole =
      absl::Milliseconds(Percentile(whole_ms, 0.5) * 0.9);
  std::printf("one job: %.0f ms; %d jobs cancelled at random times\n",
              Percentile(whole_ms, 0.5), jobs);

  std::mt19937 rng(15);
  std::uniform_real_distribution<double> at(0.0, 1.0);
  std::map<std::string, Latencies> by_stage;
  int finished_first = 0;
  for (int j = 0; j < jobs; ++j) {
    const std::string id = absl::StrCat("cancel-", j);
    client::CallCanceller canceller;
    absl::Notification accepted;
    absl::Time cancelled_at = absl::InfiniteFuture();
    std::thread cancel([&] {
      accepted.WaitForNotification();
      absl::SleepFor(whole * at(rng));
      cancelled_at = absl::Now();
      canceller.Cancel();
    });
    auto result = (*client)->Quantize(Job(id),
                                      [&](const v1::JobEvent& e) {
                                        if (e.has_accepted()) accepted.Notify();
                                      },
                                      {.canceller = &canceller});
    const absl::Time returned = absl::Now();
    cancel.join();
    auto line = (*server)->WaitForLog("job finished", {{"request_id", id}});
    if (!line.ok()) return 1;
    if (result.ok() || !line->contains("cancel_seconds")) {
      ++finished_first;  // the job ended before the cancel
      continue;
    }
    double server_s = 0;
    (void)absl::SimpleAtod(line->value("cancel_seconds", "0"), &server_s);
    Latencies& l = by_stage[line->value("stage", "?")];
    l.server_ms.push_back(server_s * 1e3);
    l.client_ms.push_back(absl::ToDoubleMilliseconds(returned - cancelled_at));
  }
  std::printf("%-16s %5s  %-28s %-28s\n", "stage", "jobs",
              "server: cancel->worker free", "client: Cancel()->return");
  std::printf("%-16s %5s  %-28s %-28s\n", "", "", "median / max ms",
              "median / max ms");
  for (const auto& [stage, l] : by_stage) {
    std::printf("%-16s %5zu  %8.2f / %-17.2f %8.2f / %-17.2f\n", stage.c_str(),
                l.server_ms.size(), Percentile(l.server_ms, 0.5),
                Percentile(l.server_ms, 1.0), Percentile(l.client_ms, 0.5),
                Percentile(l.client_ms, 1.0));
  }
  std::printf("%d jobs finished before their cancel\n", finished_first);
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Run(argc, argv); }
