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
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/quantctl/command.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/runtime/thread_pool.h"
#include "core/util/status_macros.h"

namespace quantd::quantctl {
namespace {

constexpr char kUsage[] =
    "infer MODEL.onnx --inputs DIR --out DIR [--threads N] [--warmup N] "
    "[--repeat N]";

struct InferArgs {
  std::string model;
  std::string inputs;
  std::string out;
  int threads = 1;
  int warmup = 0;  // untimed runs per sample before the timed ones
  int repeat = 1;  // timed runs per sample (median reported); outputs come
                   // from the first
};

int UsageError(const std::string& message) {
  return quantctl::UsageError("infer", kUsage, message);
}

// Returns 0 when parsed, else the exit code.
int ParseArgs(const std::vector<std::string>& args, InferArgs* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* dst) { return TakeFlagValue(args, &i, dst); };
    std::string v;
    if (a == "--inputs") {
      if (!value(&out->inputs)) return UsageError("--inputs needs a folder");
    } else if (a == "--out") {
      if (!value(&out->out)) return UsageError("--out needs a folder");
    } else if (a == "--threads" || a == "--repeat" || a == "--warmup") {
      const int min = a == "--warmup" ? 0 : 1;
      int n = 0;
      if (!value(&v) || !absl::SimpleAtoi(v, &n) || n < min || n > 1024) {
        return UsageError(
            absl::StrCat(a, " needs an integer in [", min, ", 1024]"));
      }
      (a == "--threads"  ? out->threads
       : a == "--repeat" ? out->repeat
                         : out->warmup) = n;
    } else if (a == "--quantized") {
      return UsageError(
          "--quantized (fake-quant inference) is not available in this build");
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: quantctl %s\n", kUsage);
      return -1;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(absl::StrCat("unknown flag ", a));
    } else if (out->model.empty()) {
      out->model = a;
    } else {
      return UsageError(absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (out->model.empty()) return UsageError("MODEL.onnx is required");
  if (out->inputs.empty()) return UsageError("--inputs DIR is required");
  if (out->out.empty()) return UsageError("--out DIR is required");
  return 0;
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
  if (int code = ParseArgs(argv, &args); code != 0) return code < 0 ? 0 : code;
  absl::Status status = Infer(args);
  if (!status.ok()) {
    std::fprintf(stderr, "quantctl infer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(infer, kUsage, RunInfer);

}  // namespace quantd::quantctl
