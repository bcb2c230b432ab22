// The memory model's estimates for GenerateData and Prune against their
// measured peaks (bench/service/one_job_peak.h: each job alone in a fresh
// quantd). The estimate is what admission reserves
// (job_memory.h, with the compute threads plus the job's worker running).
// Target: within 25% (under-estimates are what let a job past a budget).
//
//   side_memory_bench [--compute_threads=N] [--only=generate|prune]
// ppocr_cls from $QUANTD_CACHE_DIR (scripts/fetch_models.sh); the prune
// model is built here (tests/integration/test_jobs.h).
#include <grpcpp/grpcpp.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "bench/service/one_job_peak.h"
#include "core/datagen/generate_job.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/pipeline/memory/job_memory.h"
#include "quantd/v1/data_generation_service.grpc.pb.h"
#include "quantd/v1/pruning_service.grpc.pb.h"
#include "tests/integration/test_jobs.h"

namespace quantd {
namespace {

using bench::IntFlag;
using bench::OneJobPeakMib;
using bench::StringFlag;

// Results of any size: a generated 1024x1024 image is 12 MiB.
std::shared_ptr<grpc::Channel> Channel(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

// The call's events read to the end; its final status.
template <typename Event>
absl::Status ReadToEnd(grpc::ClientReader<Event>* reader) {
  Event e;
  while (reader->Read(&e)) {
  }
  const grpc::Status st = reader->Finish();
  return st.ok() ? absl::OkStatus()
                 : absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                                st.error_message());
}

absl::Status Generate(const std::string& target,
                      const v1::GenerateDataRequest& request) {
  grpc::ClientContext ctx;
  auto service = v1::DataGenerationService::NewStub(Channel(target));
  return ReadToEnd(service->GenerateData(&ctx, request).get());
}

absl::Status Prune(const std::string& target, const v1::PruneRequest& request) {
  grpc::ClientContext ctx;
  auto service = v1::PruningService::NewStub(Channel(target));
  return ReadToEnd(service->Prune(&ctx, request).get());
}

bool all_within = true;

void PrintRow(const std::string& name, double predicted, double measured) {
  if (measured <= 0) {
    std::printf("%-34s %9.1f MiB   (failed)\n", name.c_str(), predicted);
    all_within = false;
    return;
  }
  const double error = predicted / measured - 1;
  all_within = all_within && std::fabs(error) <= 0.25;
  std::printf("%-34s %9.1f MiB %9.1f MiB %+7.1f%%\n", name.c_str(), predicted,
              measured, error * 100);
  std::fflush(stdout);
}

void GenerateRows(const std::string& model_path, int compute_threads) {
  auto bytes = ReadFileLimited(model_path, int64_t{1} << 31);
  if (!bytes.ok()) {
    std::printf("generate: skipped (%s)\n", bytes.status().ToString().c_str());
    return;
  }
  auto model = ImportOnnx(*bytes);
  if (!model.ok()) return;
  struct Case {
    int64_t count, batch, h, w;
  };
  for (const Case& c : {Case{32, 32, 48, 192}, Case{1, 1, 512, 512},
                        Case{1, 1, 1024, 1024}, Case{4, 4, 256, 256}}) {
    v1::GenerateDataRequest r;
    r.set_onnx_model(*bytes);
    r.set_count(c.count);
    r.set_batch_size(c.batch);
    r.set_iterations(2);
    for (int64_t d : {int64_t{3}, c.h, c.w}) r.add_shape(d);
    auto options = datagen::DataGenOptionsFromRequest(r);
    if (!options.ok()) continue;
    const double predicted =
        EstimateGenerateMemoryBytes(*model, *options, compute_threads + 1) /
        1048576.0;
    const double measured = OneJobPeakMib(
        compute_threads,
        [&](const std::string& target) { return Generate(target, r); });
    PrintRow(absl::StrCat("generate ppocr_cls ", c.count, "x3x", c.h, "x", c.w),
             predicted, measured);
  }
}

void PruneRows(int compute_threads) {
  for (int64_t hw : {128, 256, 512}) {
    for (const char* metric : {"lfh", "magnitude"}) {
      v1::PruneRequest r = testing::TwoConvPruneRequest(hw);
      r.set_importance_metric(metric);
      auto model = ImportOnnx(r.onnx_model());
      if (!model.ok()) return;
      const double predicted =
          EstimatePruneMemoryBytes(r, *model, compute_threads + 1) / 1048576.0;
      const double measured = OneJobPeakMib(
          compute_threads,
          [&](const std::string& target) { return Prune(target, r); });
      PrintRow(absl::StrCat("prune two-conv 1x3x", hw, "x", hw, " ", metric),
               predicted, measured);
    }
  }
}

int Run(int argc, char** argv) {
  const int compute_threads = IntFlag(argc, argv, "compute_threads", 1);
  const std::string only = StringFlag(argc, argv, "only", "");
  const char* cache_env = std::getenv("QUANTD_CACHE_DIR");
  const std::string cache =
      cache_env != nullptr ? cache_env : QUANTD_SOURCE_ROOT "/.cache";
  std::printf(
      "job                                predicted   measured    error\n");
  if (only.empty() || only == "generate") {
    GenerateRows(cache + "/models/ppocr_cls.onnx", compute_threads);
  }
  if (only.empty() || only == "prune") PruneRows(compute_threads);
  std::printf("every job within 25%%: %s\n", all_within ? "yes" : "no");
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Run(argc, argv); }
