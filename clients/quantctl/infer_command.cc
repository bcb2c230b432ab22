// quantctl infer MODEL.onnx --inputs DIR --out DIR [--threads N]
//
// Runs float inference in-process with quantd's executor over a sample set
// (DESIGN.md layout) and writes DIR/<sample>/<output>.npy, printing each
// sample's latency and a summary. --threads N uses N threads in all (the
// calling thread plus N-1 pool workers), like ONNX Runtime's intra_op
// threads, so the two can be compared one to one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "clients/quantctl/command.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/runtime/thread_pool.h"
#include "core/util/status_macros.h"

namespace quantd::quantctl {
namespace {

struct InferArgs {
  std::string model;
  std::string inputs;
  std::string out;
  int threads = 1;
  int warmup = 0;  // untimed runs per sample before the timed ones
  int repeat = 1;  // timed runs per sample (median reported); outputs come
                   // from the first
};

FlagSet Flags(InferArgs* a) {
  FlagSet f("infer", "MODEL.onnx --inputs DIR --out DIR",
            "Runs float inference in-process with quantd's executor over a "
            "sample set and writes DIR/<sample>/<output>.npy, with each "
            "sample's latency.");
  f.Positional("MODEL.onnx", "the ONNX model", &a->model);
  f.String("inputs", "DIR", "sample set (one .npy per input per sample)",
           &a->inputs, {.required = true});
  f.String("out", "DIR", "output folder", &a->out, {.required = true});
  f.Int("threads", "threads in all (ORT's intra_op threads)", 1, 1024,
        &a->threads, {.default_text = "1"});
  f.Int("warmup", "untimed runs per sample first", 0, 1024, &a->warmup,
        {.default_text = "0"});
  f.Int("repeat", "timed runs per sample (the median is reported)", 1, 1024,
        &a->repeat, {.default_text = "1"});
  return f;
}

std::vector<FlagSet> FlagSets() {
  static InferArgs unused;
  return {Flags(&unused)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

absl::Status Infer(const InferArgs& args) {
  ASSIGN_OR_RETURN(Model model, ImportOnnxFile(args.model));
  std::vector<std::string> input_names;
  for (const ValueInfo& input : model.graph.inputs) {
    input_names.push_back(input.name);
  }
  ASSIGN_OR_RETURN(SampleSet samples, ReadSampleSet(args.inputs, input_names));

  ThreadPool pool(args.threads - 1);
  ExecutorOptions options;
  options.pool = &pool;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                   Executor::Create(std::move(model), options));

  std::vector<double> latencies_ms;
  int64_t peak_bytes = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string& name = samples.names[i];
    std::map<std::string, Tensor> outputs;
    std::vector<double> runs;
    for (int w = 0; w < args.warmup; ++w) {
      auto result = executor->Run(samples.samples[i]);
      if (!result.ok()) {
        return absl::Status(
            result.status().code(),
            absl::StrCat("sample '", name, "': ", result.status().message()));
      }
    }
    for (int r = 0; r < args.repeat; ++r) {
      RunStats stats;
      const auto start = std::chrono::steady_clock::now();
      auto result = executor->Run(samples.samples[i], {}, &stats);
      const auto end = std::chrono::steady_clock::now();
      if (!result.ok()) {
        return absl::Status(
            result.status().code(),
            absl::StrCat("sample '", name, "': ", result.status().message()));
      }
      runs.push_back(
          std::chrono::duration<double, std::milli>(end - start).count());
      peak_bytes = std::max(peak_bytes, stats.peak_bytes);
      if (r == 0) outputs = *std::move(result);
    }
    RETURN_IF_ERROR(WriteSample(args.out, name, outputs));
    const double ms = Median(runs);
    latencies_ms.push_back(ms);
    std::printf("%s: %.3f ms\n", name.c_str(), ms);
  }
  const double total =
      std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0);
  std::printf(
      "%zu samples, %d thread(s): mean %.3f ms, median %.3f ms, min %.3f ms, "
      "max %.3f ms per sample; peak tensor memory %.1f MiB; outputs in %s\n",
      latencies_ms.size(), args.threads, total / latencies_ms.size(),
      Median(latencies_ms),
      *std::min_element(latencies_ms.begin(), latencies_ms.end()),
      *std::max_element(latencies_ms.begin(), latencies_ms.end()),
      peak_bytes / (1024.0 * 1024.0), args.out.c_str());
  return absl::OkStatus();
}

int RunInfer(const std::vector<std::string>& argv) {
  InferArgs args;
  if (int rc = Flags(&args).ParseOrExit(argv); rc >= 0) return rc;
  absl::Status status = Infer(args);
  if (!status.ok()) {
    std::fprintf(stderr, "quantctl infer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(infer, "float inference over a sample set (timed)", RunInfer,
                 FlagSets);

}  // namespace quantd::quantctl
